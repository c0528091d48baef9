import TLS

/// Where a connection goes and how it authenticates.
struct APNsEndpoint {
    var host: String
    var port: UInt16
    /// `:authority`: the host, with the port when it is not 443 (RFC 9110 §7.2).
    var authority: String
    var tlsContext: TLSContext
    var tokenProvider: APNsTokenProvider?
    var connectTimeout: Duration
    var pingInterval: Duration
    var pingTimeout: Duration
    var wallClock: @Sendable () -> Int
}
