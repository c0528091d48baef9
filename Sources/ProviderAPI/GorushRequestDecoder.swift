// A gorush `/api/push` body to notifications (issue #13): the field names
// as gorush spells them (notify/notification.go, `PushNotification`), the
// checks and messages of its handler (router/server.go, `pushHandler`), and
// our limits. Fields of other platforms are not read; a field platform 1
// uses with the wrong type fails the whole request, as Go's decoder fails
// gorush's binding.

/// Why a whole `/api/push` request is refused (answered 400 with
/// `encodeGorushError`). One line; quotes at most 40 characters of what the
/// sender wrote, never a whole token or body.
public struct ProviderRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Decodes a gorush request body: `{"notifications":[{…},…]}`.
///
/// Checks, in order: the body size (before parsing), the JSON (strict: see
/// `parseStrictJSON`), `notifications` present and an array (gorush:
/// "Missing notifications field."), not empty ("Notifications field is
/// empty."), at most `maxNotifications` (gorush's "Number of
/// notifications(N) over limit(M)"), each an object whose platform 1 fields
/// have gorush's types, and at most `maxTokens` tokens in all.
/// `null` stands for a field not given, as in Go.
public func decodeGorushRequest(_ body: some Collection<UInt8>, limits: ProviderLimits)
    throws(ProviderRequestError) -> [ProviderNotification] {
    guard body.count <= limits.maxBodyBytes else {
        throw ProviderRequestError("Request body of \(body.count) bytes is over the limit of \(limits.maxBodyBytes) bytes.")
    }
    let document: JSONValue
    do {
        document = try parseStrictJSON(body)
    } catch {
        throw ProviderRequestError("Malformed JSON: " + error.description + ".")
    }
    guard case .object = document else {
        throw ProviderRequestError("The body must be a JSON object with a notifications array, not \(document.kindDescription).")
    }
    let elements: [JSONValue]
    switch document["notifications"] {
    case nil, .null?: throw ProviderRequestError("Missing notifications field.")
    case .array(let array)?: elements = array
    case let other?: throw ProviderRequestError("notifications must be an array, not \(other.kindDescription).")
    }
    if elements.isEmpty { throw ProviderRequestError("Notifications field is empty.") }
    if elements.count > limits.maxNotifications {
        throw ProviderRequestError("Number of notifications(\(elements.count)) over limit(\(limits.maxNotifications))")
    }
    var notifications: [ProviderNotification] = []
    notifications.reserveCapacity(elements.count)
    var tokenCount = 0
    for (index, element) in elements.enumerated() {
        let notification = try decodeNotification(element, path: "notifications[\(index)]")
        tokenCount += notification.tokens.count
        if tokenCount > limits.maxTokens {
            throw ProviderRequestError("Number of tokens(\(countTokens(elements))) over limit(\(limits.maxTokens))")
        }
        notifications.append(notification)
    }
    return notifications
}

/// The tokens of every element, for the over-limit message.
private func countTokens(_ elements: [JSONValue]) -> Int {
    elements.reduce(0) { sum, element in
        if case .array(let tokens)? = element["tokens"] { sum + tokens.count } else { sum }
    }
}

private func decodeNotification(_ value: JSONValue, path: String) throws(ProviderRequestError) -> ProviderNotification {
    guard case .object(let members) = value else {
        throw ProviderRequestError("\(path) must be an object, not \(value.kindDescription).")
    }
    var n = ProviderNotification()
    for member in members {
        let v = member.value
        let at = path + "." + member.name
        switch member.name {
        case "notif_id": n.id = try string(v, at)
        case "tokens": n.tokens = try strings(v, at)
        case "platform": n.platform = try int(v, at)
        case "app": n.app = v == .null ? nil : try string(v, at)
        case "topic": n.topic = try string(v, at)
        case "message": n.message = try string(v, at)
        case "title": n.title = try string(v, at)
        case "priority": n.priority = try string(v, at)
        case "content_available": n.contentAvailable = try bool(v, at)
        case "mutable_content": n.mutableContent = try bool(v, at)
        case "sound": n.sound = try sound(v, at)
        case "data": n.data = try object(v, at)
        case "retry": n.retry = try int(v, at)
        case "expiration": n.expiration = v == .null ? nil : try int64(v, at)
        case "apns_id": n.apnsID = try string(v, at)
        case "collapse_id": n.collapseID = try string(v, at)
        case "push_type": n.pushType = try string(v, at)
        case "badge": n.badge = v == .null ? nil : try int(v, at)
        case "category": n.category = try string(v, at)
        case "thread-id": n.threadID = try string(v, at)
        case "url-args": n.urlArgs = try strings(v, at)
        case "alert": n.alert = try alert(v, at)
        case "production": n.production = try bool(v, at)
        case "development": n.development = try bool(v, at)
        case "name": n.soundName = try string(v, at)
        case "volume": n.soundVolume = try float(v, at)
        case "interruption_level": n.interruptionLevel = try string(v, at)
        case "content-state": n.contentState = try object(v, at)
        case "stale-date": n.staleDate = try int64(v, at)
        case "dismissal-date": n.dismissalDate = try int64(v, at)
        case "event": n.event = try string(v, at)
        case "timestamp": n.timestamp = try int64(v, at)
        case "attributes-type": n.attributesType = try string(v, at)
        case "attributes": n.attributes = try object(v, at)
        case "relevance-score": n.relevanceScore = v == .null ? nil : try double(v, at)
        default: continue  // another platform's field, or one gorush does not know
        }
    }
    return n
}

/// gorush's `Sound` is `any`: a string is the sound's name, an object
/// Apple's critical-sound dictionary (read with mapstructure, whose
/// numbers become the fields' types); gorush ignores other kinds, which
/// are refused here instead.
private func sound(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> ProviderSound? {
    switch value {
    case .null: return nil
    case .string(let name): return .name(name)
    case .object(let members):
        var critical = 0, name = "", volume: Float = 0
        for member in members {
            switch member.name {
            case "critical": critical = try int(member.value, path + ".critical")
            case "name": name = try string(member.value, path + ".name")
            case "volume": volume = try float(member.value, path + ".volume")
            default: continue
            }
        }
        return .dictionary(critical: critical, name: name, volume: volume)
    default:
        throw ProviderRequestError("\(path) must be a string or an object, not \(value.kindDescription).")
    }
}

private func alert(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> ProviderAlert {
    var a = ProviderAlert()
    for member in try object(value, path) {
        let v = member.value
        let at = path + "." + member.name
        switch member.name {
        case "action": a.action = try string(v, at)
        case "action-loc-key": a.actionLocKey = try string(v, at)
        case "body": a.body = try string(v, at)
        case "launch-image": a.launchImage = try string(v, at)
        case "loc-args": a.locArgs = try strings(v, at)
        case "loc-key": a.locKey = try string(v, at)
        case "title": a.title = try string(v, at)
        case "subtitle": a.subtitle = try string(v, at)
        case "title-loc-args": a.titleLocArgs = try strings(v, at)
        case "title-loc-key": a.titleLocKey = try string(v, at)
        case "summary-arg": a.summaryArg = try string(v, at)
        case "summary-arg-count": a.summaryArgCount = try int(v, at)
        default: continue
        }
    }
    return a
}

private func wrongType(_ path: String, _ expected: String, _ value: JSONValue) -> ProviderRequestError {
    ProviderRequestError("\(path) must be \(expected), not \(value.kindDescription).")
}

private func string(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> String {
    switch value {
    case .null: return ""
    case .string(let text): return text
    default: throw wrongType(path, "a string", value)
    }
}

private func bool(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Bool {
    switch value {
    case .null: return false
    case .bool(let flag): return flag
    default: throw wrongType(path, "true or false", value)
    }
}

/// Go reads an integer field only from an integer literal in range: no
/// fraction, no exponent.
private func int64(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Int64 {
    switch value {
    case .null: return 0
    case .number(let text):
        guard let number = Int64(text) else {
            throw ProviderRequestError("\(path) must be an integer between \(Int64.min) and \(Int64.max), not \(quotedForMessage(text)).")
        }
        return number
    default: throw wrongType(path, "an integer", value)
    }
}

private func int(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Int {
    Int(try int64(value, path))
}

private func double(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Double {
    switch value {
    case .null: return 0
    case .number(let text):
        // The payload carries it as a float32 (apns2's relevance-score).
        guard let number = Double(text), Float(number).isFinite else {
            throw ProviderRequestError("\(path) is out of range: \(quotedForMessage(text)).")
        }
        return number
    default: throw wrongType(path, "a number", value)
    }
}

private func float(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Float {
    switch value {
    case .null: return 0
    case .number(let text):
        guard let number = Float(text), number.isFinite else {
            throw ProviderRequestError("\(path) is out of range: \(quotedForMessage(text)).")
        }
        return number
    default: throw wrongType(path, "a number", value)
    }
}

private func strings(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> [String] {
    switch value {
    case .null: return []
    case .array(let elements):
        var result: [String] = []
        result.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            result.append(try string(element, "\(path)[\(index)]"))
        }
        return result
    default: throw wrongType(path, "an array of strings", value)
    }
}

private func object(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> [JSONMember] {
    switch value {
    case .null: return []
    case .object(let members): return members
    default: throw wrongType(path, "an object", value)
    }
}
