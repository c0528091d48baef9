/// How one Redis connection waits, retries and bounds itself.
public struct RedisConnectionSettings: Equatable, Sendable {
    /// From the start of an attempt to the server's answers to `AUTH` and
    /// `SELECT`: resolving, connecting and logging in together.
    public var connectTimeout: Duration = .seconds(5)
    /// From `send` to the reply, the wait for a connection included. Every
    /// command of a connection has the same timeout, so their deadlines
    /// come in the order they were sent and one timer serves them all; a
    /// blocking command (`XREADGROUP … BLOCK`) needs a connection whose
    /// timeout is longer than its block.
    public var commandTimeout: Duration = .seconds(5)
    /// The wait before reconnecting after a failed attempt or a lost
    /// connection: base·2^(n−1) after the n-th failure in a row, at most the
    /// cap, half of it fixed and half random ("equal jitter", so that many
    /// relays do not come back at once).
    public var reconnectBase: Duration = .milliseconds(100)
    public var reconnectCap: Duration = .seconds(10)
    /// Commands queued or waiting for their reply, at most: beyond, `send`
    /// fails at once with `tooManyQueued`, so a Redis that is away or slow
    /// costs bounded memory.
    public var maxPendingCommands = 16_384
    public var replyLimits = RedisReplyLimits.default

    public init() {}
}
