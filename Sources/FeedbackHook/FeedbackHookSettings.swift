// Start-up validation of the hook's settings (issue #13): the lead calls
// these on FEEDBACK_HOOK_URL and FEEDBACK_HOOK_HEADERS before starting, so a
// typo stops the relay with a clear message instead of failing every post.

import RelayCore

/// The hook's URL as start-up accepted it.
public struct FeedbackHookURL: Sendable, Equatable {
    /// The URL as configured (may hold a secret: never log it).
    public let text: String
    /// `scheme://host[:port]`, what logs and errors may show. Userinfo and
    /// query are left out as the issue asks, and the path too: webhook URLs
    /// often carry their secret in the path (Slack's, Discord's).
    public let loggable: String
}

/// Checks that `text` is an absolute `http` or `https` URL with a host, as
/// libcurl parses it.
public func parseFeedbackHookURL(_ text: String) throws(FeedbackHookError) -> FeedbackHookURL {
    guard !text.isEmpty else { throw .invalidURL("empty") }
    let parts: CurlURLParts
    switch curlURLParts(text) {
    case .success(let parsed): parts = parsed
    case .failure(let error): throw error
    }
    guard parts.scheme == "http" || parts.scheme == "https" else {
        throw .invalidURL("the scheme must be http or https")
    }
    guard !parts.host.isEmpty else { throw .invalidURL("no host") }
    let port = parts.port.map { ":\($0)" } ?? ""
    // Hosts compare without case (RFC 3986 §3.2.2); libcurl keeps the case given.
    return FeedbackHookURL(text: text, loggable: "\(parts.scheme)://\(parts.host.lowercased())\(port)")
}

/// Fields the hook sets itself (RFC 9110 §8.3 Content-Type, §8.6
/// Content-Length, §7.2 Host, §10.1.1 Expect; RFC 9112 §6.1
/// Transfer-Encoding, RFC 9110 §7.6.1 Connection): another value would break
/// the post, so such an entry is refused rather than quietly replaced.
private let reservedHeaderNames: Set<String> = [
    "content-type", "content-length", "transfer-encoding", "host", "expect", "connection",
]

/// Parses `FEEDBACK_HOOK_HEADERS`: a comma-separated list of `Name: value`
/// entries, as gorush's `feedback_header` list (`x-gorush-token:4e98…`). The
/// name and value are split at the first `:` and trimmed of spaces and tabs;
/// the name must be an HTTP token (RFC 9110 §5.6.2), the value non-empty and
/// free of control characters, CR and LF above all (a header injection).
/// Values cannot hold a comma (it separates entries). Blank text is no
/// headers. Errors name the entry by position and, when it is a valid
/// token, its name; never its value.
public func parseFeedbackHookHeaders(_ list: String) throws(FeedbackHookError) -> [(name: String, value: String)] {
    let text = Array(list.utf8)
    guard !trimmingOWS(text).isEmpty else { return [] }
    var headers: [(name: String, value: String)] = []
    for (index, entry) in text.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).enumerated() {
        let position = index + 1
        let trimmed = trimmingOWS(entry)
        guard !trimmed.isEmpty else { throw .invalidHeader("entry \(position) is empty") }
        guard let colon = trimmed.firstIndex(of: UInt8(ascii: ":")) else {
            throw .invalidHeader("entry \(position) is not `Name: value` (no ':')")
        }
        headers.append(try checkedHeader(name: trimmed[trimmed.startIndex..<colon],
                                         value: trimmingOWS(trimmed[(colon + 1)...]), position: position))
    }
    return headers
}

/// One header entry checked (the `position`th, for the message): the rules of
/// `parseFeedbackHookHeaders`, but for a value that may hold a comma. Also
/// used by `FeedbackHook.init` for headers given to it directly.
func checkedHeader(name nameBytes: some Collection<UInt8>, value valueBytes: some Collection<UInt8>,
                   position: Int) throws(FeedbackHookError) -> (name: String, value: String) {
    guard !nameBytes.isEmpty, nameBytes.allSatisfy({ isTokenByte($0) }) else {
        throw .invalidHeader("entry \(position): the name is not an HTTP token (RFC 9110 §5.6.2)")
    }
    let name = String(decoding: nameBytes, as: UTF8.self)
    guard !reservedHeaderNames.contains(name.lowercased()) else {
        throw .invalidHeader("entry \(position) (\(name)): the hook sets this field itself")
    }
    guard !valueBytes.isEmpty else { throw .invalidHeader("entry \(position) (\(name)): the value is empty") }
    guard !valueBytes.contains(where: { isForbiddenInFieldValue($0) }) else {
        throw .invalidHeader("entry \(position) (\(name)): the value holds a control character (CR, LF…)")
    }
    return (name: name, value: String(decoding: valueBytes, as: UTF8.self))
}
