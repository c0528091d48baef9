import APNsCore
import EventLoop
import FCMCore

/// A sender whose outcomes the test decides. Completions are kept until
/// `completeAll` (manual mode) or run on the next loop iteration through
/// `loop.execute`-free scheduling (loop mode), never inside `send`.
public final class FakeSender: NotificationSender {
    public private(set) var sent: [APNsNotification] = []
    private var pending: [(APNsNotification, (APNsDelivery) -> Void)] = []
    /// Loop mode: answer after `delay` on `loop` with `outcome(notification)`.
    private let loop: EventLoop?
    private let delay: Duration
    private let outcome: (APNsNotification) -> DeliveryOutcome
    private let onSend: ((APNsNotification) -> Void)?

    public init(loop: EventLoop? = nil, delay: Duration = .zero, onSend: ((APNsNotification) -> Void)? = nil,
         outcome: @escaping (APNsNotification) -> DeliveryOutcome = { .apns(status: 200, reason: nil, apnsID: $0.apnsID) }) {
        self.loop = loop
        self.delay = delay
        self.outcome = outcome
        self.onSend = onSend
    }

    public func send(_ notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        sent.append(notification)
        onSend?(notification)
        if let loop {
            let answer = APNsDelivery(outcome: outcome(notification))
            _ = loop.schedule(after: delay) { completion(answer) }
        } else {
            pending.append((notification, completion))
        }
    }

    public var pendingCount: Int { pending.count }

    public func completeAll() {
        let waiting = pending
        pending = []
        for (notification, completion) in waiting { completion(APNsDelivery(outcome: outcome(notification))) }
    }

    public func complete(with outcome: DeliveryOutcome) {
        complete(with: APNsDelivery(outcome: outcome))
    }

    public func complete(with delivery: APNsDelivery) {
        let waiting = pending
        pending = []
        for (_, completion) in waiting { completion(delivery) }
    }
}

/// An FCM sender whose outcomes the test decides, as `FakeSender` for
/// APNs: completions kept until `completeAll` (manual mode) or run after
/// `delay` on `loop` (loop mode), never inside `send`.
public final class FakeFCMSender: FCMSender {
    public private(set) var sent: [FCMNotification] = []
    private var pending: [(FCMNotification, (FCMDelivery) -> Void)] = []
    private let loop: EventLoop?
    private let delay: Duration
    private let outcome: (FCMNotification) -> FCMOutcome

    public init(loop: EventLoop? = nil, delay: Duration = .zero,
                outcome: @escaping (FCMNotification) -> FCMOutcome = { _ in
                    .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
                }) {
        (self.loop, self.delay, self.outcome) = (loop, delay, outcome)
    }

    public func send(_ notification: FCMNotification, completion: @escaping (FCMDelivery) -> Void) {
        sent.append(notification)
        if let loop {
            let answer = FCMDelivery(outcome: outcome(notification))
            _ = loop.schedule(after: delay) { completion(answer) }
        } else {
            pending.append((notification, completion))
        }
    }

    public var pendingCount: Int { pending.count }

    public func completeAll() {
        let waiting = pending
        pending = []
        for (notification, completion) in waiting { completion(FCMDelivery(outcome: outcome(notification))) }
    }

    public func complete(with outcome: FCMOutcome) {
        let waiting = pending
        pending = []
        for (_, completion) in waiting { completion(FCMDelivery(outcome: outcome)) }
    }
}
