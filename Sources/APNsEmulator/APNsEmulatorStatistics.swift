/// Counters since start (or the last `reset()`); a consistent-enough snapshot
/// (each value read atomically, not all at one instant).
public struct APNsEmulatorStatistics: Sendable, Hashable {
    /// Complete requests received (every outcome).
    public var received: Int
    /// Answered 200.
    public var accepted: Int
    /// Answered with an error status (validation, fault token, forced).
    public var rejected: Int
    /// Deliberately left unanswered (fault token or forced `.noAnswer`).
    public var unanswered: Int
    /// Streams reset instead of answered.
    public var resetStreams: Int
    /// Connections dropped on purpose (fault token, forced, dropAfterStreams).
    public var droppedConnections: Int
    /// 200s for an apns-id that had already been answered 200: a client
    /// that resent a notification APNs had accepted (a ledger error).
    public var duplicateAPNsIDs: Int
    /// TCP connections accepted.
    public var connections: Int
    /// Connections open now.
    public var openConnections: Int
    /// TLS handshakes that failed (no or wrong client certificate, no h2…).
    public var handshakeFailures: Int
}
