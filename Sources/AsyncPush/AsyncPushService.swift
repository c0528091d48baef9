import APNsCore
import Delivery
import FCMCore

/// What the asynchronous queue reads of a push service's answer beyond
/// `PushService`: the wait it asks for, and the answer as the queue's
/// `done` hears it. A conformance per service, resolved at compile time:
/// the queue's try is generic over it and specialised for each.
protocol AsyncPushService: PushService {
    /// The answer's `Retry-After`, seconds; nil: none.
    static func retryAfterSeconds(of delivery: Delivery) -> Int?
    static func asyncOutcome(of delivery: Delivery) -> AsyncOutcome
}

/// The last try's outcome of an asynchronous notification, in its
/// service's words (the route's metrics count it).
public enum AsyncOutcome: Sendable, Equatable {
    case apns(DeliveryOutcome)
    case fcm(FCMOutcome)
}

extension APNsPush: AsyncPushService {
    static func retryAfterSeconds(of delivery: APNsDelivery) -> Int? { delivery.retryAfterSeconds }
    static func asyncOutcome(of delivery: APNsDelivery) -> AsyncOutcome { .apns(delivery.outcome) }
}

extension FCMPush: AsyncPushService {
    /// FCM's `Retry-After` (when it names none, `FCMVerdict`'s: 60 s after
    /// a 429, 10 s after a 5xx), and
    /// the relay's own waits (no connection up, overloaded).
    static func retryAfterSeconds(of delivery: FCMDelivery) -> Int? {
        guard case .retryLater(let seconds, _) = delivery.verdict else { return nil }
        return seconds
    }

    static func asyncOutcome(of delivery: FCMDelivery) -> AsyncOutcome { .fcm(delivery.outcome) }
}
