/// Monotonic counters of one pool (or summed over a client's pools).
public struct PoolCounters: Sendable, Equatable {
    /// `send` calls.
    public var sent = 0
    /// Completions delivered (each `send` gets exactly one).
    public var completed = 0
    /// Requests handed back unprocessed (REFUSED_STREAM, above GOAWAY's
    /// last-stream-id) and queued again.
    public var resent = 0
    public var answerTimeouts = 0
    public var connectionsOpened = 0
    public var connectFailures = 0
    public var goAwaysReceived = 0
    /// Ready connections that died (not closed in order).
    public var connectionsLost = 0
    /// PINGs sent on idle connections.
    public var pingsSent = 0

    public init() {}

    public static func + (lhs: PoolCounters, rhs: PoolCounters) -> PoolCounters {
        var sum = lhs
        sum.sent += rhs.sent
        sum.completed += rhs.completed
        sum.resent += rhs.resent
        sum.answerTimeouts += rhs.answerTimeouts
        sum.connectionsOpened += rhs.connectionsOpened
        sum.connectFailures += rhs.connectFailures
        sum.goAwaysReceived += rhs.goAwaysReceived
        sum.pingsSent += rhs.pingsSent
        sum.connectionsLost += rhs.connectionsLost
        return sum
    }
}
