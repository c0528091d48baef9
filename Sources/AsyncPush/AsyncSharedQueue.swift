import Feedback

/// The queue a fleet shares for asynchronous notifications (with
/// `REDIS_URL`, `FleetAsyncQueue`): the accept path adds to it, any
/// instance delivers.
public protocol AsyncSharedQueue: Sendable {
    /// Adds all of `items` or none; `completion` (on any thread) says which.
    func add(_ items: [AsyncNotification], completion: @escaping @Sendable (AsyncSharedAddResult) -> Void)
    /// The notification held under `receipt` is done (delivered, or failed
    /// for good): it leaves the queue. `deadToken`: the token its end
    /// refused for good, which joins the app's feedback list in the same
    /// step (never without the notification leaving, never twice);
    /// `feedback`: this instance's store, whose FEEDBACK_MAX bounds that
    /// list and which counts what it drops.
    func finish(_ receipt: String, deadToken: FeedbackEntry?, feedback: FeedbackStore)
    /// The fleet's pending notifications, as last read.
    var length: Int { get }
    /// Notifications this instance took over from others.
    var claimed: Int { get }
}

/// `AsyncSharedQueue.add`'s answer.
public enum AsyncSharedAddResult: Sendable, Equatable {
    case added
    /// Over `API_ASYNC_MAX_PENDING` across the fleet: nothing was added.
    case full
    /// The queue did not take the write (why, for the log): nothing is
    /// known to be added.
    case failed(String)
}
