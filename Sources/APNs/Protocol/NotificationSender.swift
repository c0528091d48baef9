/// The seam between the relay and the APNs client: the relay hands a built
/// notification to a sender that lives on the same event loop, and gets the
/// outcome back on that loop.
///
/// Contract (every implementation, real or fake):
/// - `send` is called on the sender's event-loop thread;
/// - `completion` runs exactly once, on that same thread, never inside the
///   `send` call itself (so callers never see re-entrant completions);
/// - a notification is accepted by APNs at most once per `send`: a sender may
///   resend a stream APNs provably never processed (GOAWAY above
///   last-stream-id, REFUSED_STREAM), never one it may have processed.
public protocol NotificationSender: AnyObject {
    func send(_ notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void)
}

/// The full result of one send: the outcome the relay maps (ARCHITECTURE.md §3),
/// for 410 when APNs last knew the token to be valid, and the answer's
/// `Retry-After` when it had one.
public struct APNsDelivery: Sendable, Equatable {
    public var outcome: DeliveryOutcome
    /// 410 Unregistered / ExpiredToken: the body's `timestamp`, milliseconds
    /// since the epoch ("the last time APNs confirmed the token was no longer
    /// valid for the topic").
    public var unregisteredTimestamp: Int64?
    /// An error answer's `Retry-After`, in seconds (`retryAfterSeconds(_:)`).
    public var retryAfterSeconds: Int?

    public init(outcome: DeliveryOutcome, unregisteredTimestamp: Int64? = nil, retryAfterSeconds: Int? = nil) {
        self.outcome = outcome
        self.unregisteredTimestamp = unregisteredTimestamp
        self.retryAfterSeconds = retryAfterSeconds
    }
}

