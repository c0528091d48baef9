import APNsCore
import EventLoop

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
