import RelayCore

/// What the listener needs to know (ARCHITECTURE.md §1, §6).
public struct ListenerOptions: Sendable {
    /// nil: `::` (dual stack), falling back to `0.0.0.0` without IPv6.
    public var bindAddress: String?
    /// 0 picks a free port (tests); `RelayServer.start` returns the one bound.
    public var port: UInt16
    /// One listening socket per loop, the kernel spreading connections
    /// (SO_REUSEPORT); false: one socket on the first loop hands connections
    /// to the loops in turn.
    public var reusePort: Bool
    public var limits: HTTP1Limits
    public var timeouts: HTTP1ConnectionMachine.Timeouts
    public var maxConnections: Int
    public var maxInFlight: Int
    /// `PUBLIC_URL`: the origin a restricted endpoint's VAPID `aud` must
    /// name; nil: each request's scheme and `Host`.
    public var publicURL: String?

    /// Unset arguments take `Configuration.defaults`' values.
    public init(bindAddress: String? = nil, port: UInt16, reusePort: Bool = Configuration.defaults.reusePort,
                limits: HTTP1Limits = HTTP1Limits(), timeouts: HTTP1ConnectionMachine.Timeouts = .init(),
                maxConnections: Int = Configuration.defaults.maxConnections,
                maxInFlight: Int = Configuration.defaults.maxInFlight) {
        self.bindAddress = bindAddress
        self.port = port
        self.reusePort = reusePort
        self.limits = limits
        self.timeouts = timeouts
        self.maxConnections = maxConnections
        self.maxInFlight = maxInFlight
    }

    /// The listener part of the configuration.
    public init(configuration: Configuration) {
        self.init(
            bindAddress: configuration.bindAddress, port: configuration.port, reusePort: configuration.reusePort,
            limits: HTTP1Limits(maxHeaderBytes: configuration.maxHeaderBytes, maxBodyBytes: configuration.maxBodyBytes),
            timeouts: .init(header: configuration.headerTimeout, body: configuration.bodyTimeout,
                            keepAlive: configuration.keepAliveTimeout),
            maxConnections: configuration.maxConnections, maxInFlight: configuration.maxInFlight)
        publicURL = configuration.publicURL
    }
}
