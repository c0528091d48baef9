/// What every loop's asynchronous `/api/push` shares: whether a request
/// that does not choose is asynchronous (`API_ASYNC`), the retry policy
/// (`API_ASYNC_MAX_TRIES`), the bound on what is pending
/// (`API_ASYNC_MAX_PENDING`) and the counts. Each loop has its own
/// `AsyncDeliveryQueue`.
public final class AsyncPushes: Sendable {
    public let byDefault: Bool
    public let policy: AsyncRetryPolicy
    public let bound: AsyncPendingBound
    public let counts = AsyncDeliveryCounts()
    /// With `REDIS_URL`: the fleet's queue, which takes what the accept
    /// path queues instead of the loops' in-process queues (`bound` is then
    /// unused: the fleet's queue holds `API_ASYNC_MAX_PENDING` itself).
    public let shared: (any AsyncSharedQueue)?

    /// A full queue's 503 asks for this wait: about the time a queue of
    /// the default bound takes to drain a second's worth of requests.
    public static let retryAfterSeconds = 5

    public init(byDefault: Bool, maxTries: Int, maxPending: Int, shared: (any AsyncSharedQueue)? = nil) {
        self.byDefault = byDefault
        self.shared = shared
        policy = AsyncRetryPolicy(maxTries: maxTries)
        bound = AsyncPendingBound(maxPending: maxPending)
    }
}
