// The variables of the provider API (WIRE.md §4) that are more than one
// number or name: `API_KEYS`, `FEEDBACK_HOOK_HEADERS` (lists, comma-
// separated) and `FEEDBACK_HOOK_URL`. Their errors name the variable and
// the item, never a key, a header's value or the URL (which may carry a
// token in its query).

import HTTPCore

/// One header the feedback hook sends with each request
/// (`FEEDBACK_HOOK_HEADERS`, gorush's `feedback_header`). The value may be
/// a secret (`Authorization: Bearer …`): printing the header hides it.
public struct FeedbackHookHeader: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): <hidden>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["name": name], displayStyle: .struct) }
}

/// The items of a comma-separated variable, trimmed; an empty item (two
/// commas, a trailing comma) is an error naming its place, from 1.
private func listItems(_ text: String, variable: String) throws(ConfigurationError) -> [ArraySlice<UInt8>] {
    var items: [ArraySlice<UInt8>] = []
    forEachListElement(of: Array(text.utf8)[...], omittingEmpty: false) { items.append(trimmingOWS($0)) }
    if let empty = items.firstIndex(where: \.isEmpty) {
        throw ConfigurationError(variable: variable, message: "item \(empty + 1) is empty (two commas, or one at an end?)")
    }
    return items
}

/// `API_KEYS`: keys separated by commas, white space around each trimmed,
/// each checked by `apiKeyProblem`, no two the same.
func parseAPIKeys(_ text: String) throws(ConfigurationError) -> [APIKey] {
    var keys: [APIKey] = []
    for (index, item) in try listItems(text, variable: "API_KEYS").enumerated() {
        let key: APIKey
        do {
            key = try APIKey(validating: String(decoding: item, as: UTF8.self))
        } catch {
            throw ConfigurationError(variable: "API_KEYS", message: "item \(index + 1) \(error.message)")
        }
        if let earlier = keys.firstIndex(of: key) {
            throw ConfigurationError(variable: "API_KEYS", message: "items \(earlier + 1) and \(index + 1) are the same key")
        }
        keys.append(key)
    }
    return keys
}

/// Header names the feedback hook's HTTP client writes itself: the
/// message's framing and the connection's (RFC 9112 §6, RFC 9110 §7.6.1),
/// and the JSON body's type, as gorush sends it.
private let clientOwnedHeaders: Set<String> = [
    "host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "proxy-connection",
]

/// `FEEDBACK_HOOK_HEADERS`: `Name: value` items separated by commas
/// (a value therefore holds no comma). The name an RFC 9110 §5.6.2 token
/// and not one the client writes; the value not empty, visible ASCII and
/// spaces only (no CR or LF: nothing can be smuggled into the request).
func parseHookHeaders(_ text: String) throws(ConfigurationError) -> [FeedbackHookHeader] {
    var headers: [FeedbackHookHeader] = []
    for (index, item) in try listItems(text, variable: "FEEDBACK_HOOK_HEADERS").enumerated() {
        func problem(_ message: String) -> ConfigurationError {
            ConfigurationError(variable: "FEEDBACK_HOOK_HEADERS", message: "item \(index + 1) \(message)")
        }
        guard let colon = item.firstIndex(of: UInt8(ascii: ":")) else {
            throw problem("has no \":\"; write Name: value, e.g. Authorization: Bearer …")
        }
        let name = trimmingOWS(item[..<colon]), value = trimmingOWS(item[(colon + 1)...])
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            throw problem("has no header name before \":\" (letters, digits and !#$%&'*+-.^_`|~, RFC 9110 §5.6.2)")
        }
        let nameText = String(decoding: name, as: UTF8.self)
        if clientOwnedHeaders.contains(asciiLowercased(name)) {
            throw problem("sets \(nameText), which the hook's HTTP client writes itself")
        }
        guard !value.isEmpty else { throw problem("gives \(nameText) no value") }
        guard value.allSatisfy({ $0 == UInt8(ascii: "\t") || (0x20...0x7E).contains($0) }) else {
            throw problem("gives \(nameText) a value with a control or non-ASCII character")
        }
        headers.append(FeedbackHookHeader(name: nameText, value: String(decoding: value, as: UTF8.self)))
    }
    return headers
}

/// `FEEDBACK_HOOK_URL`: `http://` or `https://`, a host (no user
/// information: credentials go in `FEEDBACK_HOOK_HEADERS`), then any path
/// and query of visible ASCII. The problem, nil for none; it never quotes
/// the URL.
func hookURLProblem(_ text: String) -> String? {
    let lowered = asciiLowercased(text)
    guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
        return "is not an http:// or https:// URL"
    }
    guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
        return "holds a space, a control or a non-ASCII character (percent-encode it, RFC 3986 §2.1)"
    }
    guard vapidOrigin(of: text) != nil else {
        return "has no host, a port that is not a number, or user information (give credentials in FEEDBACK_HOOK_HEADERS)"
    }
    return nil
}
