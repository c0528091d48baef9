// The origin a VAPID JWT's `aud` names (RFC 8292 §2), compared leniently: a
// mismatch is a 503 that only delays delivery, never a 4xx that deletes a
// subscription, so spellings of the same origin must not differ.

import HTTPCore


/// The origin (RFC 6454 §4: scheme, host, port) of a URL, as comparable
/// text `scheme://host[:port]`: scheme and host lowercased (both are
/// case-insensitive, RFC 3986 §3.1, §3.2.2), the scheme's default port
/// dropped (443 for https, 80 for http; an empty port too, RFC 3986 §3.2.3),
/// and the path, query and fragment left out (RFC 8292 §2 asks for the
/// origin; a sender that adds `/` or the endpoint's path still names it).
/// nil when `text` is not `scheme://authority…` or has user information.
public func vapidOrigin(of text: String) -> String? {
    let bytes = Array(text.utf8)
    guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
          bytes[(colon + 1)...].starts(with: "//".utf8) else { return nil }
    let scheme = bytes[..<colon]
    guard isSchemeStart(scheme[scheme.startIndex]), scheme.allSatisfy(isSchemeByte) else { return nil }
    let authorityStart = colon + 3
    let authorityEnd = bytes[authorityStart...].firstIndex(where: {
        $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
    }) ?? bytes.endIndex
    let authority = bytes[authorityStart..<authorityEnd]
    guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }

    // The port follows the last `:` outside an IPv6 literal (`[::1]:8443`).
    var host = authority
    var port = authority[authority.endIndex...]
    let literalEnd = authority.lastIndex(of: UInt8(ascii: "]")) ?? authority.startIndex
    if let portColon = authority[literalEnd...].lastIndex(of: UInt8(ascii: ":")) {
        host = authority[..<portColon]
        port = authority[(portColon + 1)...]
        guard port.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
    }
    guard !host.isEmpty else { return nil }

    let lowerScheme = asciiLowercased(String(decoding: scheme, as: UTF8.self))
    var origin = lowerScheme + "://" + asciiLowercased(String(decoding: host, as: UTF8.self))
    // Leading zeros are the same port (RFC 3986 §3.2.3 port = *DIGIT).
    let digits = port.drop(while: { $0 == UInt8(ascii: "0") })
    let portText = String(decoding: digits, as: UTF8.self)
    let defaultPort = lowerScheme == "https" ? "443" : lowerScheme == "http" ? "80" : nil
    if !port.isEmpty, portText != defaultPort {
        origin += ":" + (portText.isEmpty ? "0" : portText)
    }
    return origin
}

private func isSchemeStart(_ byte: UInt8) -> Bool {
    (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
}

/// RFC 3986 §3.1: ALPHA / DIGIT / "+" / "-" / ".".
private func isSchemeByte(_ byte: UInt8) -> Bool {
    isSchemeStart(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
}
