import APNsCore
import EventLoop

/// A loop's APNs client as the provider API sees it, notifications and
/// broadcast API calls both: what each call was sent as, and an answer the
/// test decides. Completions wait for `completeAll` (never inside `send`).
public final class FakeBroadcastSender: NotificationSender, APNsBroadcastSender {
    private let notifications = FakeCompletions<APNsNotification, APNsDelivery>(loop: nil, delay: .zero) {
        APNsDelivery(outcome: .apns(status: 200, reason: nil, apnsID: $0.apnsID))
    }
    private let calls: FakeCompletions<APNsBroadcastRequest, APNsBroadcastAnswer>

    public init(answer: @escaping (APNsBroadcastRequest) -> APNsBroadcastAnswer) {
        calls = FakeCompletions(loop: nil, delay: .zero, answer: answer)
    }

    public var sentCalls: [APNsBroadcastRequest] { calls.sent }

    public func send(_ notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        notifications.send(notification, completion: completion)
    }

    public func send(_ request: APNsBroadcastRequest, completion: @escaping (APNsBroadcastAnswer) -> Void) {
        calls.send(request, completion: completion)
    }

    public func completeAll() {
        notifications.completeAll()
        calls.completeAll()
    }
}
