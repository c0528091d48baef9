// Why a service account's file cannot be used: one line naming the field
// and what is wrong with it, for check-config, the start-up log and a
// reload (the caller puts the file's name first). Never the private key:
// a reason about `private_key` says what is wrong with its shape only, and
// a syntax error says where, not what it found there (the parser's own
// message may quote a byte of the text, and that text holds the key).

import JSON

public enum FCMServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(bytes: Int, limit: Int)
    case notJSON(JSONErrorPlace)
    case notAnObject(kind: String)
    case missing(field: String)
    case notAString(field: String, kind: String)
    /// `reason` completes "<field> …": "is empty", "has no PEM block".
    case invalid(field: String, reason: String)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            "is \(bytes) bytes, more than a service account's file (at most \(limit))"
        case .notJSON(let place):
            "is not JSON (RFC 8259): \(place)"
        case .notAnObject(let kind):
            "is \(kind), not a JSON object"
        case .missing(let field):
            "\(field) is missing"
        case .notAString(let field, let kind):
            "\(field) is \(kind), not a string"
        case .invalid(let field, let reason):
            "\(field) \(reason)"
        }
    }
}
