import APNsCore
import Feedback
import RelayCore

/// A push service a delivery goes through: APNs today (`APNsPush`); a
/// second service (FCM) joins as one more conformance, with its own
/// notification, its own answer and its own reading of that answer. What
/// every service shares stays in `DeliveryPath`: the place under
/// MAX_IN_FLIGHT, the app's health, a dead token into the feedback list,
/// the failed-push log to the hook.
///
/// A conformance is a small value holding the loop's client. The path is
/// generic over it and specialised where a route calls it (`deliver` is
/// inlinable), so the service adds no existential on the per-notification
/// path: the answer's reading below is static, resolved at compile time.
public protocol PushService {
    /// One request for one device.
    associatedtype Notification
    /// The answer to one notification, or the relay's own failure to get one.
    associatedtype Delivery
    /// What the end of a delivery needs of its notification, held by the
    /// send's completion until the answer: as little as that (APNs: the
    /// environment and the device token, the feedback list's key).
    associatedtype Recipient

    /// Sends through this loop's client and hands the answer to `end`, with
    /// the notification's recipient (`end.finish`), exactly once, on this loop, never inside this call
    /// (`NotificationSender`'s contract). The conformance forms the
    /// client's completion itself (`DeliveryEnd` says why), moving `end`
    /// into it: a copy retained each of its references once more, and
    /// released them again, per notification.
    func send(_ notification: Notification, then end: consuming DeliveryEnd<Self>)

    static func recipient(of notification: Notification) -> Recipient
    /// The answer the relay gives itself over MAX_IN_FLIGHT.
    static var overloaded: Delivery { get }
    /// What the answer means for the notification.
    static func result(of delivery: Delivery) -> PushResult
    /// The app's health with this service: what its answers last said of
    /// the app's credentials.
    static func health(of app: RelayApp) -> any CredentialHealth
    /// What the answer says of the app's credentials; nil: nothing.
    static func credentialVerdict(of delivery: Delivery) -> CredentialVerdict?
    /// The feedback list's entry when the answer says the token is dead
    /// for good; nil otherwise.
    static func deadToken(in delivery: Delivery, recipient: Recipient, app: String) -> FeedbackEntry?
    /// The token's failed-push log: nil when the service accepted the
    /// notification; `source` names its gorush notification and the id the
    /// relay sent, when there are.
    static func failedPushLog(for delivery: Delivery, token: String, app: String, source: FailedPushSource?)
        -> FailedPushLog?
}

/// What one answer of a push service means for its notification, whatever
/// the service: the asynchronous retry policy decides on it.
public enum PushResult: Sendable, Equatable {
    /// The service accepted it.
    case accepted
    /// Refused for good: another try would get the same answer (the token,
    /// the payload or the credentials are wrong).
    case refused
    /// A failure a later try may not meet: the service busy or failing, no
    /// answer, the relay's own refusals.
    case retryable
}
