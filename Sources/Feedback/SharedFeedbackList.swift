// The feedback lists kept beyond this process (with REDIS_URL, the fleet's
// in Redis: `FleetFeedback`), as the pulls and the daemon see them, so
// that what records and what pulls need not know Redis.

/// What one pull of an app's feedback got: the entries, oldest first as
/// each instance wrote them, and, when the shared list could not be asked,
/// why (the entries are then only those this instance had not sent).
public struct FeedbackPull: Sendable {
    public var entries: [FeedbackEntry]
    public var redisFailure: String?

    public init(entries: [FeedbackEntry], redisFailure: String? = nil) {
        (self.entries, self.redisFailure) = (entries, redisFailure)
    }
}

/// A feedback list shared by several instances, which this instance's
/// `FeedbackStore` buffers for. Class-bound, as `HookOutbox` is: the sink
/// that holds it is copied into every delivery's completion.
public protocol SharedFeedbackList: AnyObject, Sendable {
    /// Takes and clears the shared entries of `app` (this instance's
    /// included); `completion` runs on another thread, exactly once.
    func pull(app: String, completion: @escaping @Sendable (FeedbackPull) -> Void)
    /// Entries this instance holds that the shared list has not confirmed.
    var unflushed: Int { get }
    /// Shutdown: writes what this instance holds, waiting at most
    /// `within`, and stops; returns how many entries were not written.
    func finish(within: Duration) -> Int
}
