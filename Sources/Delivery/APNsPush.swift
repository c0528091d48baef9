import APNsCore
import Feedback
import RelayCore

/// APNs as a push service: the loop's APNs client (`NotificationSender`),
/// and how an APNs answer reads as the end of a delivery.
public struct APNsPush: PushService {
    public let sender: NotificationSender

    public init(sender: NotificationSender) {
        self.sender = sender
    }

    @inlinable
    public func send(_ notification: APNsNotification, then end: consuming DeliveryEnd<APNsPush>) {
        let recipient = Self.recipient(of: notification)
        // Moved into a constant: a closure that captured the consuming
        // parameter itself captured it by reference, in a box of its own.
        let ending = consume end
        sender.send(notification) { delivery in ending.finish(delivery, recipient: recipient) }
    }

    /// The environment and the device token in APNs' form: the feedback
    /// list's key.
    public struct Recipient: Sendable {
        public let environment: APNsEnvironment
        public let deviceToken: String

        @inlinable
        public init(environment: APNsEnvironment, deviceToken: String) {
            (self.environment, self.deviceToken) = (environment, deviceToken)
        }
    }

    @inlinable
    public static func recipient(of notification: APNsNotification) -> Recipient {
        Recipient(environment: notification.environment, deviceToken: notification.deviceToken)
    }

    @inlinable
    public static var overloaded: APNsDelivery { APNsDelivery(outcome: .overloaded) }

    /// Accepted: 2xx. Refused: any other APNs status (4xx: the token, the
    /// payload or the credentials are wrong, and a try more would get the
    /// same answer). Retryable: 429 (TooManyRequests), 5xx, no answer
    /// (answer timeout, stream reset, connect or TLS failure), and the
    /// relay's own refusals (over MAX_IN_FLIGHT, every connection down).
    public static func result(of delivery: APNsDelivery) -> PushResult {
        switch delivery.outcome {
        case .apns(let status, _, _):
            switch status {
            case 200..<300: .accepted
            case 429, 500..<600: .retryable
            default: .refused
            }
        case .answerTimedOut, .connectFailed, .tlsFailed, .streamFailed, .allConnectionsDown, .overloaded:
            .retryable
        }
    }

    @inlinable
    public static func health(of app: RelayApp) -> any CredentialHealth { app.health }

    @inlinable
    public static func credentialVerdict(of delivery: APNsDelivery) -> CredentialVerdict? {
        delivery.outcome.credentialVerdict
    }

    /// 410, 400 BadDeviceToken / DeviceTokenNotForTopic: `FeedbackEntry`
    /// decides.
    public static func deadToken(in delivery: APNsDelivery, recipient: Recipient, app: String) -> FeedbackEntry? {
        guard case .apns(let status, let reason, _) = delivery.outcome else { return nil }
        return FeedbackEntry(app: app, environment: recipient.environment, token: recipient.deviceToken,
                             status: status, reason: reason, apnsTimestamp: delivery.unregisteredTimestamp,
                             now: FeedbackSink.unixMilliseconds())
    }
}
