/// What a listener needs to know (WIRE.md §1.2, §5).
public struct ListenerOptions: Sendable {
    /// nil: `::` (dual stack), falling back to `0.0.0.0` without IPv6.
    public var bindAddress: String?
    /// 0 picks a free port (tests); `HTTP1Listener.start` returns the one bound.
    public var port: UInt16
    /// One listening socket per loop, the kernel spreading connections
    /// (SO_REUSEPORT); false: one socket on the first loop hands connections
    /// to the loops in turn.
    public var reusePort: Bool
    public var limits: HTTP1Limits
    public var timeouts: HTTP1ConnectionMachine.Timeouts
    public var maxConnections: Int

    /// The defaults are the README configuration table's (the relay's `Configuration`
    /// reads them from here): SO_REUSEPORT, 16,384 connections.
    public init(bindAddress: String? = nil, port: UInt16, reusePort: Bool = true,
                limits: HTTP1Limits = HTTP1Limits(), timeouts: HTTP1ConnectionMachine.Timeouts = .init(),
                maxConnections: Int = 16_384) {
        self.bindAddress = bindAddress
        self.port = port
        self.reusePort = reusePort
        self.limits = limits
        self.timeouts = timeouts
        self.maxConnections = maxConnections
    }
}
