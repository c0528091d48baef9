// The rules of FCM HTTP v1's projects.messages.send, applied to one
// complete request as Google applies them: the access token first (its
// front end answers 401/403 before FCM reads the body), then the JSON
// against the Message schema (unknown names and wrong types: 400 with a
// BadRequest detail and no FcmError, as its JSON transcoder answers), then
// FCM's own checks (a token's syntax, the data's size, the TTL's range:
// 400 with an FcmError). Pure: no I/O; the caller looks access tokens up.

import FCMCore
import JSON

/// A message that passed every rule.
struct ValidatedFCMMessage {
    var projectID: String
    var account: FCMTrustedAccount
    /// The `message` object, as sent.
    var message: JSONValue
    /// The one target set.
    var token: String?
    var topic: String?
    var condition: String?
    /// `validate_only`: checked, answered, neither delivered nor recorded.
    var validateOnly: Bool
}

enum FCMSendValidator {
    static let pathPrefix = "/v1/projects/"
    static let pathSuffix = "/messages:send"
    /// Larger bodies are not read (a message with its 4 KB of data is far
    /// smaller).
    static let maxBodyBytes = 65_536

    // The Message schema's member names (FCM HTTP v1 reference); `apns`,
    // `webpush` and `fcm_options` must be objects, not inspected further.
    static let messageMembers: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]
    static let androidMembers: Set<String> = [
        "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options",
        "direct_boot_ok",
    ]
    static let notificationMembers: Set<String> = ["title", "body", "image"]
    /// AndroidMessagePriority's values (JSON takes enum names in either case).
    static let priorities: Set<String> = ["normal", "high", "NORMAL", "HIGH"]
    /// Keys FCM keeps for itself in `data`.
    static let reservedDataKeys: Set<String> = ["from", "notification", "message_type"]

    static func projectID(inPath path: String) -> Substring? {
        guard path.hasPrefix(pathPrefix), path.hasSuffix(pathSuffix),
              path.utf8.count > pathPrefix.utf8.count + pathSuffix.utf8.count else { return nil }
        let project = path.dropFirst(pathPrefix.count).dropLast(pathSuffix.count)
        return project.contains("/") ? nil : project
    }

    /// `grant`: the issued, unexpired access token's grant (nil for any other).
    static func validate(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8],
                         grant: (String) -> FCMIssuedTokens.Grant?) -> Result<ValidatedFCMMessage, FCMRejection> {
        guard method == "POST", let project = projectID(inPath: path) else { return .failure(.notFound) }
        guard let authorization = headers.first(where: { $0.name == "authorization" })?.value,
              authorization.count > 7, authorization.prefix(7).lowercased() == "bearer ",
              let granted = grant(String(authorization.dropFirst(7))) else {
            return .failure(.unauthenticated)
        }
        guard granted.account.account.projectID == project else {
            return .failure(.permissionDenied(project: String(project)))
        }
        let contentType = headers.first(where: { $0.name == "content-type" })?.value
        guard let contentType, FCMTokenEndpoint.mediaType(contentType) == "application/json" else {
            return .failure(badJSON(field: "", "Invalid JSON payload received. Expected application/json."))
        }
        guard body.count <= maxBodyBytes else {
            return .failure(.invalidArgument(field: "message", "Request payload size exceeds the limit"))
        }
        guard let document = try? parseStrictJSON(body), case .object(let members) = document else {
            return .failure(badJSON(field: "", "Invalid JSON payload received. Expected a JSON object."))
        }
        var validateOnly = false
        for member in members {
            switch (member.name, member.value) {
            case ("message", _): break
            case ("validate_only", .bool(let value)): validateOnly = value
            case ("validate_only", _): return .failure(wrongType(at: "validate_only", "TYPE_BOOL", member.value))
            default: return .failure(unknownName(member.name, at: ""))
            }
        }
        guard let message = document["message"], case .object(let fields) = message else {
            return .failure(.invalidArgument(field: "message", "Request contains an invalid argument."))
        }
        var validated = ValidatedFCMMessage(projectID: String(project), account: granted.account, message: message,
                                            validateOnly: validateOnly)
        if let rejection = check(fields, into: &validated) { return .failure(rejection) }
        return .success(validated)
    }

    /// The message's members: schema, target, data, android, notification.
    private static func check(_ fields: [JSONMember], into validated: inout ValidatedFCMMessage) -> FCMRejection? {
        if let unknown = fields.first(where: { !messageMembers.contains($0.name) }) {
            return unknownName(unknown.name, at: "message")
        }
        var targets = 0
        var dataBytes = 0
        for field in fields {
            let path = "message." + field.name
            switch field.name {
            case "token", "topic", "condition", "name":
                guard case .string(let text) = field.value else { return wrongType(at: path, "TYPE_STRING", field.value) }
                guard field.name != "name" else { continue }
                targets += 1
                guard targets == 1 else {
                    return badJSON(field: "message", "Invalid value at 'message' (oneof), oneof field 'target' is "
                        + "already set. Cannot set '\(field.name)'")
                }
                if field.name == "token" {
                    guard FCMToken.isValid(text.utf8) else { return .invalidToken }
                    validated.token = text
                } else if field.name == "topic" {
                    guard isTopic(text) else { return .invalidArgument(field: path, "Invalid topic name: \(text)") }
                    validated.topic = text
                } else {
                    guard !text.isEmpty else { return .invalidArgument(field: path, "Invalid condition expression") }
                    validated.condition = text
                }
            case "data":
                switch dataSize(field.value, at: path) {
                case .success(let size): dataBytes += size
                case .failure(let rejection): return rejection
                }
            case "notification":
                switch notificationSize(field.value, at: path) {
                case .success(let size): dataBytes += size
                case .failure(let rejection): return rejection
                }
            case "android":
                if let rejection = checkAndroid(field.value, dataBytes: &dataBytes) { return rejection }
            default:
                guard case .object = field.value else { return wrongType(at: path, "TYPE_MESSAGE", field.value) }
            }
        }
        guard targets == 1 else {
            return .invalidArgument(field: "message", "Recipient of the message is not set.")
        }
        guard dataBytes <= FCMMessageLimits.maxDataBytes else {
            return FCMRejection(status: 400, rpcStatus: "INVALID_ARGUMENT", message: "Message is too big",
                                errorCode: "INVALID_ARGUMENT")
        }
        return nil
    }

    private static func checkAndroid(_ value: JSONValue, dataBytes: inout Int) -> FCMRejection? {
        let path = "message.android"
        guard case .object(let fields) = value else { return wrongType(at: path, "TYPE_MESSAGE", value) }
        if let unknown = fields.first(where: { !androidMembers.contains($0.name) }) {
            return unknownName(unknown.name, at: path)
        }
        for field in fields {
            let fieldPath = path + "." + field.name
            switch field.name {
            case "collapse_key", "restricted_package_name":
                guard case .string = field.value else { return wrongType(at: fieldPath, "TYPE_STRING", field.value) }
            case "priority":
                guard case .string(let text) = field.value, priorities.contains(text) else {
                    return wrongType(at: fieldPath, "type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority",
                                     field.value)
                }
            case "ttl":
                guard case .string(let text) = field.value, let seconds = durationSeconds(text) else {
                    return badJSON(field: fieldPath, "Invalid value at '\(fieldPath)' "
                        + "(type.googleapis.com/google.protobuf.Duration), Field 'ttl', Illegal duration format; "
                        + "duration must end with 's'")
                }
                guard seconds <= FCMMessageLimits.maxTTLSeconds else {
                    return .invalidArgument(field: fieldPath, "TTL must be at most \(FCMMessageLimits.maxTTLSeconds)s")
                }
            case "direct_boot_ok":
                guard case .bool = field.value else { return wrongType(at: fieldPath, "TYPE_BOOL", field.value) }
            case "data":
                switch dataSize(field.value, at: fieldPath) {
                case .success(let size): dataBytes += size
                case .failure(let rejection): return rejection
                }
            default:
                guard case .object = field.value else { return wrongType(at: fieldPath, "TYPE_MESSAGE", field.value) }
            }
        }
        return nil
    }

    /// A map of strings: the bytes of its keys and values, as
    /// `FCMMessageLimits.maxDataBytes` counts them.
    private static func dataSize(_ value: JSONValue, at path: String) -> Result<Int, FCMRejection> {
        guard case .object(let entries) = value else { return .failure(wrongType(at: path, "TYPE_MESSAGE", value)) }
        var size = 0
        for (index, entry) in entries.enumerated() {
            guard case .string(let text) = entry.value else {
                return .failure(wrongType(at: "\(path)[\(index)].value", "TYPE_STRING", entry.value))
            }
            if reservedDataKeys.contains(entry.name) || entry.name.hasPrefix("google.") || entry.name.hasPrefix("gcm.") {
                return .failure(.invalidArgument(field: path, "Invalid data payload key: \(entry.name)"))
            }
            size += entry.name.utf8.count + text.utf8.count
        }
        return .success(size)
    }

    /// The notification's strings count against the data limit as the
    /// relay counts its title (RelayCore's `fcmDataSize`).
    private static func notificationSize(_ value: JSONValue, at path: String) -> Result<Int, FCMRejection> {
        guard case .object(let fields) = value else { return .failure(wrongType(at: path, "TYPE_MESSAGE", value)) }
        if let unknown = fields.first(where: { !notificationMembers.contains($0.name) }) {
            return .failure(unknownName(unknown.name, at: path))
        }
        var size = 0
        for field in fields {
            guard case .string(let text) = field.value else {
                return .failure(wrongType(at: path + "." + field.name, "TYPE_STRING", field.value))
            }
            size += field.name.utf8.count + text.utf8.count
        }
        return .success(size)
    }

    /// google.protobuf.Duration's JSON form: seconds, an optional fraction
    /// of up to nine digits, then `s`. The whole seconds, nil otherwise.
    static func durationSeconds(_ text: String) -> Int? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 12, whole.allSatisfy(\.isASCIIDigit) else {
            return nil
        }
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].count <= 9, parts[1].allSatisfy(\.isASCIIDigit) else { return nil }
        }
        return Int(whole)
    }

    /// FCM's topic names: `[a-zA-Z0-9-_.~%]+`, optionally after `/topics/`.
    static func isTopic(_ text: String) -> Bool {
        let name = text.hasPrefix("/topics/") ? text.dropFirst(8) : Substring(text)
        return !name.isEmpty && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"), UInt8(ascii: "%"): true
            default: false
            }
        }
    }

    // MARK: the JSON transcoder's answers (no FcmError)

    static func badJSON(field: String, _ description: String) -> FCMRejection {
        FCMRejection(status: 400, rpcStatus: "INVALID_ARGUMENT", message: description, errorCode: nil,
                     fieldViolations: [FCMRejection.FieldViolation(field: field, description: description)])
    }

    static func unknownName(_ name: String, at path: String) -> FCMRejection {
        let place = path.isEmpty ? "" : " at '\(path)'"
        return badJSON(field: path, "Invalid JSON payload received. Unknown name \"\(name)\"\(place): Cannot find field.")
    }

    static func wrongType(at path: String, _ type: String, _ value: JSONValue) -> FCMRejection {
        var shown: [UInt8] = []
        value.appendJSON(to: &shown)
        return badJSON(field: path, "Invalid value at '\(path)' (\(type)), "
            + quotedForMessage(String(decoding: shown, as: UTF8.self)))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
