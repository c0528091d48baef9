import TLS

/// Where a pool's connections go and how requests are authorized.
public struct HTTP2Endpoint {
    public var host: String
    public var port: UInt16
    /// `:authority`: the host, with the port when it is not 443 (RFC 9110 §7.2).
    public var authority: String
    public var tlsContext: TLSContext
    /// Bearer credentials per request; nil when the TLS client certificate
    /// is the credential.
    public var authorizer: (any RequestAuthorizer)?
    public var connectTimeout: Duration
    public var pingInterval: Duration
    public var pingTimeout: Duration

    public init(host: String, port: UInt16, authority: String, tlsContext: TLSContext,
                authorizer: (any RequestAuthorizer)?, connectTimeout: Duration, pingInterval: Duration,
                pingTimeout: Duration) {
        self.host = host
        self.port = port
        self.authority = authority
        self.tlsContext = tlsContext
        self.authorizer = authorizer
        self.connectTimeout = connectTimeout
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
    }
}
