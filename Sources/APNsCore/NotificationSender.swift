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
    /// As `send`, for Apple's own request passed on (the provider API's
    /// `/3/device/`): the completion also gets the answer's
    /// `apns-unique-id`, nil when APNs sent none (it sends one in the
    /// development environment only), to hand back to the client.
    func sendProxied(_ notification: APNsNotification,
                     completion: @escaping (APNsDelivery, _ uniqueID: String?) -> Void)
}

extension NotificationSender {
    /// A sender that never reads `apns-unique-id`: `send`, with none.
    public func sendProxied(_ notification: APNsNotification,
                            completion: @escaping (APNsDelivery, _ uniqueID: String?) -> Void) {
        send(notification) { completion($0, nil) }
    }
}

/// The full result of one send: the outcome the relay maps (WIRE.md §3),
/// for 410 when APNs last knew the token to be valid, and the answer's
/// `Retry-After` when it had one.
public struct APNsDelivery: Sendable, Equatable {
    public var outcome: DeliveryOutcome
    /// 410 Unregistered / ExpiredToken: the body's `timestamp`, milliseconds
    /// since the epoch ("the last time APNs confirmed the token was no longer
    /// valid for the topic"); never negative.
    public var unregisteredTimestamp: Int64? {
        get { detail.flatMap { $0 >= 0 ? $0 : nil } }
        set { detail = newValue.flatMap { $0 >= 0 ? $0 : nil } }
    }
    /// An error answer's `Retry-After`, in seconds (`retryAfterSeconds(_:)`);
    /// never on a 410, whose answer is final.
    public var retryAfterSeconds: Int? {
        get { detail.flatMap { $0 < 0 ? Int(-1 - $0) : nil } }
        set { detail = newValue.map { -1 - Int64(max($0, 0)) } }
    }
    /// Both in one stored value, as they never come together: a timestamp
    /// as it is, a `Retry-After` of s seconds as −1 − s. A delivery is
    /// copied several times per notification, and a second stored field
    /// cost the provider path about 180 instructions per notification
    /// (callgrind: 66,558 with it, 66,379 without).
    private var detail: Int64?

    public init(outcome: DeliveryOutcome, unregisteredTimestamp: Int64? = nil, retryAfterSeconds: Int? = nil) {
        self.outcome = outcome
        if let unregisteredTimestamp {
            self.unregisteredTimestamp = unregisteredTimestamp
        } else {
            self.retryAfterSeconds = retryAfterSeconds
        }
    }
}

