import HTTPCore
import RelayCore

// The syntax of the apps file's names: app ids, topics, key and team ids,
// API key names.
// Each check returns the problem as an error message, nil when the value
// is good. These values may be quoted in messages (they are not secrets).

/// Ids that would make a URL ambiguous or name something else, and why.
private let reservedIDs: [String: String] = [
    "production": "it is an environment in /relay-to/<environment>/… URLs",
    "development": "it is an environment in /relay-to/<environment>/… URLs",
    "_health": "/relay-to/_health is the health check",
    "message": "/relay-to/message/<apns-id> is the Location of a delivered notification",
    "api": "/relay-to/api is kept for the relay's API",
    "default": "\"default\" names the app the environment variables describe",
    fcmRouteSegment: "it is FCM in /relay-to/fcm/<token> URLs",
]

/// `id`: 1 to 64 lower-case letters, digits, `.`, `_`, `-` (one URL path
/// segment, the same in every case); not reserved; not `.` or `..`, which
/// URL clients resolve away (RFC 3986 §5.2.4).
func idProblem(_ id: String) -> String? {
    if let problem = nameProblem(id, limit: 64, allowed: { isLowerAlphanumeric($0) || isPunctuation($0) },
                                 otherwise: "may hold only lower-case letters, digits, \".\", \"_\" and \"-\"") {
        return problem
    }
    if let reason = reservedIDs[id] { return "\(quoted(id)) is reserved: \(reason)" }
    if id == "." || id == ".." { return "\(quoted(id)) cannot be a URL path segment (RFC 3986 §5.2.4)" }
    return nil
}

/// `topic`: a bundle id, 1 to 255 letters, digits, `.`, `-`, `_` (with a
/// suffix such as `.voip` where Apple adds one).
func topicProblem(_ topic: String) -> String? {
    nameProblem(topic, limit: 255, allowed: { isAlphanumeric($0) || isPunctuation($0) },
                otherwise: "is not a bundle id: letters, digits, \".\", \"-\" and \"_\" only")
}

/// `key-id`, `team-id`: Apple issues 10 letters and digits; the relay takes
/// 1 to 64 letters, digits, `.`, `_`, `-`, and lets APNs judge the rest.
func appleIDProblem(_ value: String) -> String? {
    nameProblem(value, limit: 64, allowed: { isAlphanumeric($0) || isPunctuation($0) },
                otherwise: "may hold only letters, digits, \".\", \"_\" and \"-\"")
}

/// An `[[api-key]]`'s `name`, shown in logs and as a metrics label: 1 to 64
/// letters, digits, `.`, `_`, `-`, the syntax of `key-id` and `team-id`
/// (no `[`, so it cannot be an `API_KEYS[n]`).
func apiKeyNameProblem(_ name: String) -> String? {
    appleIDProblem(name)
}

/// A SHA-256 fingerprint's 32 bytes from 64 hex digits, either case, the
/// pairs all separated by `:` or none; nil for anything else.
func sha256Fingerprint(_ text: String) -> [UInt8]? {
    let bytes = Array(text.utf8)
    let separated = bytes.count == 32 * 3 - 1
    guard bytes.count == 64 || separated else { return nil }
    var fingerprint: [UInt8] = []
    var index = 0
    while index < bytes.count {
        guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else { return nil }
        fingerprint.append(UInt8(high << 4 | low))
        index += 2
        if separated && index < bytes.count {
            guard bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
        }
    }
    return fingerprint
}

/// A value that must not be empty (paths, key text) and is not checked
/// further here: the relay reads it when it loads the credential.
func emptyProblem(_ value: String) -> String? {
    value.isEmpty ? "must not be empty" : nil
}

/// Empty, a byte `allowed` refuses (`otherwise`, after the quoted value),
/// or over `limit` characters (all allowed bytes are ASCII).
private func nameProblem(_ value: String, limit: Int, allowed: (UInt8) -> Bool, otherwise: String) -> String? {
    let utf8 = Array(value.utf8)
    if utf8.isEmpty { return "must not be empty" }
    guard utf8.allSatisfy(allowed) else { return "\(quoted(value)) \(otherwise)" }
    return utf8.count > limit ? "is \(utf8.count) characters long; at most \(limit)" : nil
}

private func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
}

private func isAlphanumeric(_ byte: UInt8) -> Bool {
    isLowerAlphanumeric(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
}

private func isPunctuation(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
}
