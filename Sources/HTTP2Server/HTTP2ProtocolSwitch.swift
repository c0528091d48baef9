import HTTP1

/// HTTP/2 as the other protocol of an HTTP/1.1 listener: ALPN `h2` on TLS,
/// the client connection preface (RFC 9113 §3.4) on a connection without
/// ALPN, cleartext included (h2c with prior knowledge, §3.3).
public struct HTTP2ProtocolSwitch: ProtocolSwitch {
    public let limits: HTTP2ServerLimits

    public init(limits: HTTP2ServerLimits = HTTP2ServerLimits()) {
        self.limits = limits
    }

    public var alpnIdentifier: String { "h2" }

    public var preface: [UInt8] { Self.clientPreface }

    /// RFC 9113 §3.4.
    static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public func makeConnection(_ handoff: ConnectionHandoff) -> any SwitchedConnection {
        HTTP2ServerConnection(handoff, limits: limits)
    }
}
