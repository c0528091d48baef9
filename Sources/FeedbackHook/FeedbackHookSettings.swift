// The hook's settings checked where the hook takes them: the URL
// (and what of it logs may show) and each header. Configuration reads the
// variables first, so a typo stops the relay before any post.

import HTTPCore
import RelayCore

/// The hook's URL as start-up accepted it.
public struct FeedbackHookURL: Sendable, Equatable {
    /// The URL as configured (may hold a secret: never log it).
    public let text: String
    /// `scheme://host[:port]`, what logs and errors may show. Userinfo and
    /// query are left out (either may hold a secret), and the path too: webhook URLs
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

/// One header entry checked (the `position`th, for the message), by
/// `FeedbackHook.init` for the headers it is given: FEEDBACK_HOOK_HEADERS is
/// read as a list in one place, `Configuration` (`parseHookHeaders`); this
/// keeps a hook made another way from sending a forbidden field.
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
