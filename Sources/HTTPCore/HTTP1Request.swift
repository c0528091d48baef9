/// Caps on what one request may make the listener buffer (WIRE.md
/// §1.2, §5; the relay's `Configuration` reads its defaults from here).
public struct HTTP1Limits: Sendable, Equatable {
    /// Request line plus header fields plus the empty line (and, for chunked
    /// bodies, the framing overhead and trailers). Beyond: 431 (414 while still
    /// in the request line).
    public var maxHeaderBytes: Int
    /// Decoded body bytes. Beyond: 413.
    public var maxBodyBytes: Int
    /// Header fields. Beyond: 431.
    public var maxHeaderCount: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 8 * 1024, maxHeaderCount: Int = 100) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderCount = maxHeaderCount
    }
}

/// A complete, well-framed request: HTTP/1.1's, or an HTTP/2 stream's in the
/// same form (`:path` as the target, `:authority` as `host`).
public struct HTTP1Request: Sendable, Equatable {
    public var method: String
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// The body, chunked framing removed.
    public var body: [UInt8]
    /// Whether the connection may carry another request after this one
    /// (RFC 9112 §9.3).
    public var keepAlive: Bool
    /// On a TLS connection whose client presented a certificate that
    /// verified: SHA-256 of its DER encoding (what authenticates a provider
    /// by certificate); nil otherwise.
    public var clientCertificateSHA256: [UInt8]?

    public init(method: String, target: String, version: HTTPVersion, headers: HTTPHeaders, body: [UInt8],
                keepAlive: Bool, clientCertificateSHA256: [UInt8]? = nil) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
        self.clientCertificateSHA256 = clientCertificateSHA256
    }
}
