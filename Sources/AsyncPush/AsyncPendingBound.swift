import Synchronization

/// The notifications an asynchronous `/api/push` has accepted and not yet
/// finished, counted per device token across the process, against
/// `API_ASYNC_MAX_PENDING`. A request reserves all its tokens at once or
/// none: one whose tokens do not all fit is refused whole (503 with
/// `Retry-After`), so a 200 always means every token was queued.
///
/// Lock-free, shared by every event loop, like `InFlightDeliveries`; a
/// compare-and-swap loop rather than add-then-undo, since a reservation of
/// many tokens that overshot and was undone would refuse, in between, a
/// small request that fits.
public final class AsyncPendingBound: Sendable {
    public let maxPending: Int
    private let count = Atomic<Int>(0)

    public init(maxPending: Int) {
        precondition(maxPending >= 1)
        self.maxPending = maxPending
    }

    public var pending: Int { count.load(ordering: .relaxed) }

    /// Reserves `tokens` places; false, and nothing reserved, when they do
    /// not all fit.
    public func reserve(_ tokens: Int) -> Bool {
        precondition(tokens >= 0)
        var current = count.load(ordering: .relaxed)
        while true {
            guard tokens <= maxPending - current else { return false }
            let (exchanged, original) = count.compareExchange(expected: current, desired: current + tokens,
                                                              ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back places of notifications done (delivered, failed for good,
    /// or dropped at exit).
    public func release(_ tokens: Int = 1) {
        let after = count.wrappingSubtract(tokens, ordering: .relaxed).newValue
        precondition(after >= 0, "released more than was reserved")
    }
}
