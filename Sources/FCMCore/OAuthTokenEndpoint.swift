// Where a service account's access tokens come from: the file's
// `token_uri`, an https URI (RFC 3986 §3) read into what a request needs:
// the host to connect to and name (SNI), the port, and the request target.

import JSON

/// An https token endpoint: `https://host[:port]/path[?query]`.
public struct OAuthTokenEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A DNS name or IPv4 address (RFC 3986 §3.2.2's reg-name and IPv4address).
    public let host: String
    public let port: Int
    /// The path and query: the request's `:path`.
    public let target: String
    /// The URI as the file wrote it: the assertion's `aud`, which the
    /// endpoint compares with its own.
    public let uri: String

    /// Google's endpoint, what every service account's file names today.
    public static let google = OAuthTokenEndpoint(host: "oauth2.googleapis.com", port: 443, target: "/token")

    /// Longer URIs are refused: Google's is 35 bytes.
    public static let maxURIBytes = 2048

    public init(host: String, port: Int, target: String) {
        (self.host, self.port, self.target) = (host, port, target)
        uri = "https://\(host)" + (port == 443 ? "" : ":\(port)") + target
    }

    /// Reads `uri`; only https is taken, as the assertion it receives is a
    /// credential for an hour. No user information, no fragment.
    public init(uri: String) throws(OAuthTokenEndpointError) {
        let bytes = Array(uri.utf8)
        guard bytes.count <= Self.maxURIBytes else {
            throw OAuthTokenEndpointError("is \(bytes.count) bytes long (at most \(Self.maxURIBytes))")
        }
        let scheme = Array("https://".utf8)
        guard bytes.count > scheme.count, bytes.prefix(scheme.count).map({ $0 | 0x20 }).elementsEqual(scheme.map { $0 | 0x20 })
        else {
            throw OAuthTokenEndpointError("\(quotedForMessage(uri)) is not an https:// URI")
        }
        let rest = bytes[scheme.count...]
        let authorityEnd = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var hostPart = authority, port = 443
        if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            hostPart = authority[..<colon]
            let digits = authority[(colon + 1)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy(isDigit),
                  let number = Int(String(decoding: digits, as: UTF8.self)), (1...65_535).contains(number) else {
                throw OAuthTokenEndpointError("\(quotedForMessage(uri)) has no valid port (1 to 65535)")
            }
            port = number
        }
        guard !hostPart.isEmpty, hostPart.count <= 253, hostPart.allSatisfy(Self.isHostByte),
              hostPart.first != UInt8(ascii: "."), hostPart.first != UInt8(ascii: "-") else {
            throw OAuthTokenEndpointError("\(quotedForMessage(uri)) has no valid host name")
        }
        let target = rest[authorityEnd...]
        guard !target.isEmpty else { throw OAuthTokenEndpointError("\(quotedForMessage(uri)) has no path") }
        guard target.allSatisfy(Self.isTargetByte) else {
            throw OAuthTokenEndpointError("\(quotedForMessage(uri)) has a character a path or query cannot hold")
        }
        host = String(decoding: hostPart, as: UTF8.self).lowercased()
        self.port = port
        self.target = String(decoding: target, as: UTF8.self)
        self.uri = uri
    }

    public var description: String { uri }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    /// RFC 3986 §3.3 and §3.4: unreserved, `%`, sub-delims, `:`, `@`, `/`
    /// and `?` (no `#`: a fragment is never sent).
    private static func isTargetByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || targetPunctuation.contains(byte)
    }

    private static let targetPunctuation = Array("-._~%!$&'()*+,;=:@/?".utf8)
}

/// Why a `token_uri` is refused; `reason` completes "token_uri …".
public struct OAuthTokenEndpointError: Error, Sendable, Equatable {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
}
