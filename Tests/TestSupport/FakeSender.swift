import APNsCore
import EventLoop
import FCMCore

/// What the fake senders share: the requests sent, and their completions,
/// kept until `completeAll` (manual mode) or run after `delay` on `loop`
/// (loop mode), never inside `send`.
public final class FakeCompletions<Request, Answer> {
    public private(set) var sent: [Request] = []
    private var pending: [(Request, (Answer) -> Void)] = []
    /// Loop mode: answer after `delay` on `loop` with `answer(request)`.
    private let loop: EventLoop?
    private let delay: Duration
    private let answer: (Request) -> Answer

    init(loop: EventLoop?, delay: Duration, answer: @escaping (Request) -> Answer) {
        (self.loop, self.delay, self.answer) = (loop, delay, answer)
    }

    /// `onSend` sees the request once it is recorded, before it is answered.
    func send(_ request: Request, onSend: ((Request) -> Void)? = nil, completion: @escaping (Answer) -> Void) {
        sent.append(request)
        onSend?(request)
        if let loop {
            let answer = answer(request)
            _ = loop.schedule(after: delay) { completion(answer) }
        } else {
            pending.append((request, completion))
        }
    }

    public var pendingCount: Int { pending.count }

    public func completeAll() {
        let waiting = pending
        pending = []
        for (request, completion) in waiting { completion(answer(request)) }
    }

    public func complete(with answer: Answer) {
        let waiting = pending
        pending = []
        for (_, completion) in waiting { completion(answer) }
    }
}

/// A sender whose outcomes the test decides. Completions are kept until
/// `completeAll` (manual mode) or run on the next loop iteration through
/// `loop.execute`-free scheduling (loop mode), never inside `send`.
public final class FakeSender: NotificationSender {
    private let completions: FakeCompletions<APNsNotification, APNsDelivery>
    private let onSend: ((APNsNotification) -> Void)?

    public init(loop: EventLoop? = nil, delay: Duration = .zero, onSend: ((APNsNotification) -> Void)? = nil,
         outcome: @escaping (APNsNotification) -> DeliveryOutcome = { .apns(status: 200, reason: nil, apnsID: $0.apnsID) }) {
        completions = FakeCompletions(loop: loop, delay: delay) { APNsDelivery(outcome: outcome($0)) }
        self.onSend = onSend
    }

    /// The `apns-unique-id` `sendProxied` hands on with each answer (APNs'
    /// development environment sends one); nil: none, as production.
    public var uniqueID: String?

    public var sent: [APNsNotification] { completions.sent }

    public func send(_ notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        completions.send(notification, onSend: onSend, completion: completion)
    }

    public func sendProxied(_ notification: APNsNotification,
                            completion: @escaping (APNsDelivery, _ uniqueID: String?) -> Void) {
        let uniqueID = self.uniqueID
        send(notification) { completion($0, uniqueID) }
    }

    public var pendingCount: Int { completions.pendingCount }

    public func completeAll() { completions.completeAll() }

    public func complete(with outcome: DeliveryOutcome) {
        complete(with: APNsDelivery(outcome: outcome))
    }

    public func complete(with delivery: APNsDelivery) { completions.complete(with: delivery) }
}

/// An FCM sender whose outcomes the test decides, as `FakeSender` for APNs.
public final class FakeFCMSender: FCMSender {
    private let completions: FakeCompletions<FCMNotification, FCMDelivery>

    public init(loop: EventLoop? = nil, delay: Duration = .zero,
                outcome: @escaping (FCMNotification) -> FCMOutcome = { _ in
                    .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
                }) {
        completions = FakeCompletions(loop: loop, delay: delay) { FCMDelivery(outcome: outcome($0)) }
    }

    public var sent: [FCMNotification] { completions.sent }

    public func send(_ notification: FCMNotification, completion: @escaping (FCMDelivery) -> Void) {
        completions.send(notification, completion: completion)
    }

    public var pendingCount: Int { completions.pendingCount }

    public func completeAll() { completions.completeAll() }

    public func complete(with outcome: FCMOutcome) { completions.complete(with: FCMDelivery(outcome: outcome)) }
}
