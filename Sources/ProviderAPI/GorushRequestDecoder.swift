// A gorush `/api/push` body to notifications: the field names
// as gorush spells them (notify/notification.go, `PushNotification`), the
// checks and messages of its handler (router/server.go, `pushHandler`), and
// our limits. The fields of platforms 1 and 2 are read (2's in
// GorushFCMDecoder.swift), Huawei's are not; a field read with the wrong
// type fails the whole request, as Go's decoder fails gorush's binding.
// Apple's `input-push-token` and `input-push-channel`, which gorush
// v1.22.0 lacks, are read with the types Apple gives them (a number, a
// string).

import JSON

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
    try decodeGorushPushRequest(body, limits: limits).notifications
}

/// A gorush request with the relay's extension field: a top-level
/// `"async": true|false` chooses the asynchronous answer or the synchronous
/// one (nil: not given, or `null`; the relay's `API_ASYNC` decides).
public struct GorushPushRequest: Sendable {
    public var notifications: [ProviderNotification]
    public var async: Bool?
}

/// `decodeGorushRequest` with the top-level `async` (checked after the
/// body is a JSON object, before `notifications`: anything but a boolean or
/// `null` is refused).
public func decodeGorushPushRequest(_ body: some Collection<UInt8>, limits: ProviderLimits)
    throws(ProviderRequestError) -> GorushPushRequest {
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
    let async: Bool?
    switch document["async"] {
    case nil, .null?: async = nil
    case .bool(let flag)?: async = flag
    case let other?: throw wrongType("async", "true or false", other)
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
    return GorushPushRequest(notifications: notifications, async: async)
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
    var fcm: ProviderFCMFields?
    for member in members {
        let (v, at) = (member.value, path + "." + member.name)
        if let field = stringFields[member.name] {
            n[keyPath: field] = try string(v, at)
        } else if let field = flagFields[member.name] {
            n[keyPath: field] = try bool(v, at)
        } else if let field = dateFields[member.name] {
            n[keyPath: field] = try int64(v, at)
        } else if let field = listFields[member.name] {
            n[keyPath: field] = try strings(v, at)
        } else if let field = objectFields[member.name] {
            n[keyPath: field] = try object(v, at)
        } else {
            switch member.name {
            case "platform": n.platform = try int(v, at)
            case "retry": n.retry = try int(v, at)
            case "app": n.app = v == .null ? nil : try string(v, at)
            case "expiration": n.expiration = v == .null ? nil : try int64(v, at)
            case "badge": n.badge = v == .null ? nil : try int(v, at)
            case "relevance-score": n.relevanceScore = v == .null ? nil : try double(v, at)
            case "volume": n.soundVolume = try float(v, at)
            case "sound": n.sound = try sound(v, at)
            case "alert": n.alert = try alert(v, at)
            case "image", "condition", "notification", "android", "fcm_options", "collapse_key", "time_to_live":
                try decodeFCMField(member.name, v, at, into: &fcm)
            default: continue  // Huawei's field, or one gorush does not know
            }
        }
    }
    if let fcm { n.fcm = fcm }
    return n
}

/// A field to set: key paths built from literals are Sendable (SE-0418).
private typealias Field<Root, Value> = WritableKeyPath<Root, Value> & Sendable

// gorush's JSON names (notify/notification.go) of the fields read alike.
private let stringFields: [String: Field<ProviderNotification, String>] = [
    "notif_id": \.id, "topic": \.topic, "message": \.message, "title": \.title, "priority": \.priority,
    "apns_id": \.apnsID, "collapse_id": \.collapseID, "push_type": \.pushType, "category": \.category,
    "thread-id": \.threadID, "name": \.soundName, "interruption_level": \.interruptionLevel, "event": \.event,
    "attributes-type": \.attributesType, "input-push-channel": \.inputPushChannel,
]
private let flagFields: [String: Field<ProviderNotification, Bool>] = [
    "content_available": \.contentAvailable, "mutable_content": \.mutableContent, "production": \.production,
    "development": \.development,
]
private let dateFields: [String: Field<ProviderNotification, Int64>] = [
    "timestamp": \.timestamp, "stale-date": \.staleDate, "dismissal-date": \.dismissalDate,
    "input-push-token": \.inputPushToken,
]
private let listFields: [String: Field<ProviderNotification, [String]>] = ["tokens": \.tokens, "url-args": \.urlArgs]
private let objectFields: [String: Field<ProviderNotification, [JSONMember]>] = [
    "data": \.data, "content-state": \.contentState, "attributes": \.attributes,
]

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
        let (v, at) = (member.value, path + "." + member.name)
        if let field = alertStringFields[member.name] {
            a[keyPath: field] = try string(v, at)
        } else if let field = alertListFields[member.name] {
            a[keyPath: field] = try strings(v, at)
        } else if member.name == "summary-arg-count" {
            a.summaryArgCount = try int(v, at)
        }
    }
    return a
}

// gorush's `Alert` (notify/notification.go); other keys are ignored, as Go does.
private let alertStringFields: [String: Field<ProviderAlert, String>] = [
    "action": \.action, "action-loc-key": \.actionLocKey, "body": \.body, "launch-image": \.launchImage,
    "loc-key": \.locKey, "title": \.title, "subtitle": \.subtitle, "title-loc-key": \.titleLocKey, "summary-arg": \.summaryArg,
]
private let alertListFields: [String: Field<ProviderAlert, [String]>] = [
    "loc-args": \.locArgs, "title-loc-args": \.titleLocArgs,
]

func wrongType(_ path: String, _ expected: String, _ value: JSONValue) -> ProviderRequestError {
    ProviderRequestError("\(path) must be \(expected), not \(value.kindDescription).")
}

/// `value` read by `take`; `null` is `zero` (Go leaves the field as it
/// was); another kind is an error naming the `expected` one.
private func read<T>(_ value: JSONValue, _ path: String, _ expected: String, zero: T,
                     _ take: (JSONValue) throws(ProviderRequestError) -> T?) throws(ProviderRequestError) -> T {
    if value == .null { return zero }
    guard let result = try take(value) else { throw wrongType(path, expected, value) }
    return result
}

func string(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> String {
    try read(value, path, "a string", zero: "") { if case .string(let text) = $0 { text } else { nil } }
}

func bool(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Bool {
    try read(value, path, "true or false", zero: false) { if case .bool(let flag) = $0 { flag } else { nil } }
}

func object(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> [JSONMember] {
    try read(value, path, "an object", zero: []) { if case .object(let members) = $0 { members } else { nil } }
}

func strings(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> [String] {
    try read(value, path, "an array of strings", zero: []) { (value) throws(ProviderRequestError) -> [String]? in
        guard case .array(let elements) = value else { return nil }
        var result: [String] = []
        result.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() { result.append(try string(element, "\(path)[\(index)]")) }
        return result
    }
}

/// A number's text converted by `convert`; an error naming `range` when
/// it does not convert.
private func number<T>(_ value: JSONValue, _ path: String, _ expected: String, zero: T, range: (String) -> String,
                       _ convert: (String) -> T?) throws(ProviderRequestError) -> T {
    try read(value, path, expected, zero: zero) { (value) throws(ProviderRequestError) -> T? in
        guard case .number(let text) = value else { return nil }
        guard let number = convert(text) else { throw ProviderRequestError("\(path) \(range(quotedForMessage(text))).") }
        return number
    }
}

/// Go reads an integer field only from an integer literal in range: no
/// fraction, no exponent.
func int64(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Int64 {
    try number(value, path, "an integer", zero: 0, range: { "must be an integer between \(Int64.min) and \(Int64.max), not \($0)" }) {
        Int64($0)
    }
}

private func int(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Int {
    Int(try int64(value, path))
}

/// The payload carries it as a float32 (apns2's relevance-score).
private func double(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Double {
    try number(value, path, "a number", zero: 0, range: { "is out of range: \($0)" }) { text in
        Double(text).flatMap { Float($0).isFinite ? $0 : nil }
    }
}

private func float(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> Float {
    try number(value, path, "a number", zero: 0, range: { "is out of range: \($0)" }) { text in
        Float(text).flatMap { $0.isFinite ? $0 : nil }
    }
}
