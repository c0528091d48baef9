import APNsCore
import Feedback
import RelayCore

/// APNs as the push service of Apple's own request passed on (the provider
/// API's `/3/device/`): `APNsPush` in every respect, but its answer carries
/// APNs' `apns-unique-id` beside the delivery, for the client's answer. A
/// service of its own so that only this route asks the sender for the field
/// (`NotificationSender.sendProxied`) and carries it: the other routes'
/// `APNsDelivery` stays as small as it is (its `detail` says why that
/// matters).
public struct APNsProxyPush: PushService {
    /// APNs' answer to Apple's request.
    public struct Answer: Sendable, Equatable {
        public var delivery: APNsDelivery
        /// The answer's `apns-unique-id`: nil when APNs sent none (production
        /// never does) or never answered.
        public var uniqueID: String?

        @inlinable
        public init(_ delivery: APNsDelivery, uniqueID: String? = nil) {
            (self.delivery, self.uniqueID) = (delivery, uniqueID)
        }
    }

    public let sender: NotificationSender

    public init(sender: NotificationSender) {
        self.sender = sender
    }

    /// As `APNsPush.send`, through `sendProxied`.
    @inlinable
    public func send(_ notification: APNsNotification, then end: consuming DeliveryEnd<APNsProxyPush>) {
        let recipient = Self.recipient(of: notification)
        let ending = consume end
        sender.sendProxied(notification) { delivery, uniqueID in
            ending.finish(Answer(delivery, uniqueID: uniqueID), recipient: recipient)
        }
    }

    @inlinable
    public static func recipient(of notification: APNsNotification) -> APNsPush.Recipient {
        APNsPush.recipient(of: notification)
    }

    @inlinable
    public static var overloaded: Answer { Answer(APNsPush.overloaded) }

    public static func result(of answer: Answer) -> PushResult { APNsPush.result(of: answer.delivery) }

    @inlinable
    public static func health(of app: RelayApp) -> any CredentialHealth { APNsPush.health(of: app) }

    @inlinable
    public static func credentialVerdict(of answer: Answer) -> CredentialVerdict? {
        APNsPush.credentialVerdict(of: answer.delivery)
    }

    public static func deadToken(in answer: Answer, recipient: APNsPush.Recipient, app: String) -> FeedbackEntry? {
        APNsPush.deadToken(in: answer.delivery, recipient: recipient, app: app)
    }

    @inlinable
    public static func failedPushLog(for answer: Answer, token: String, app: String, source: FailedPushSource?)
        -> FailedPushLog? {
        APNsPush.failedPushLog(for: answer.delivery, token: token, app: app, source: source)
    }
}
