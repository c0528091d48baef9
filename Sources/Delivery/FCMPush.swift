import APNsCore
import FCMCore
import Feedback
import RelayCore

/// FCM as a push service: the loop's FCM client (`FCMSender`), and how an
/// FCM send's end reads as the end of a delivery, by `FCMVerdict` (the one
/// reading of FCM's answers).
public struct FCMPush: PushService {
    public let sender: FCMSender

    public init(sender: FCMSender) {
        self.sender = sender
    }

    @inlinable
    public func send(_ notification: FCMNotification, then end: consuming DeliveryEnd<FCMPush>) {
        let recipient = Self.recipient(of: notification)
        // Moved into a constant, as APNsPush does (`DeliveryEnd` says why).
        let ending = consume end
        sender.send(notification) { delivery in ending.finish(delivery, recipient: recipient) }
    }

    /// The registration token: the feedback list's key.
    public typealias Recipient = FCMToken

    @inlinable
    public static func recipient(of notification: FCMNotification) -> FCMToken { notification.token }

    @inlinable
    public static var overloaded: FCMDelivery { FCMDelivery(outcome: .overloaded) }

    /// Accepted: 200. Refused: a dead token, credentials FCM rejects, a
    /// message FCM refused or an answer the relay cannot read (a try more
    /// would meet the same). Retryable: FCM busy or failing (429, 5xx),
    /// no connection up, the relay over MAX_IN_FLIGHT, no answer in time,
    /// and a connection, TLS or stream failure before any answer (502 to a
    /// Web Push sender, but FCM refused nothing: as on the APNs path).
    public static func result(of delivery: FCMDelivery) -> PushResult {
        switch delivery.outcome {
        case .connectFailed, .tlsFailed, .streamFailed: return .retryable
        default: break
        }
        return switch delivery.verdict {
        case .delivered: .accepted
        case .tokenDead, .credentialsRejected, .failed: .refused
        // The sender refreshes the access token and sends again before it
        // completes: met here, it is a sender's fault, and a later try may
        // not meet it.
        case .retryLater, .timedOut, .refreshAccessTokenAndResend: .retryable
        }
    }

    /// The app's FCM health; an app without FCM credentials never gets
    /// here (its FCM URLs are answered before a send), and its APNs health
    /// is never FCM's to change.
    @inlinable
    public static func health(of app: RelayApp) -> any CredentialHealth {
        app.fcm?.health ?? unusedHealth
    }

    /// Accepted when FCM took a message, rejected when it (or the token
    /// endpoint) refused the service account; nothing otherwise.
    public static func credentialVerdict(of delivery: FCMDelivery) -> CredentialVerdict? {
        switch delivery.verdict {
        case .delivered: .accepted
        case .credentialsRejected: .rejected
        default: nil
        }
    }

    /// UNREGISTERED, SENDER_ID_MISMATCH, or INVALID_ARGUMENT naming the
    /// token (`FCMVerdict.tokenDead`): the feedback list's entry, FCM's code
    /// as its reason, the relay's clock as its time (FCM gives none).
    public static func deadToken(in delivery: FCMDelivery, recipient: FCMToken, app: String) -> FeedbackEntry? {
        guard case .tokenDead(let reason) = delivery.verdict else { return nil }
        return FeedbackEntry(app: app, environment: .production, platform: .android, token: recipient.text,
                             reason: reason.text, time: FeedbackSink.unixMilliseconds())
    }

    /// The failed-push log of one token's send, nil when FCM took it:
    /// platform `android`, FCM's HTTP status and error code when it
    /// answered, and a sentence as `error` (FCM's code when it refused).
    public static func failedPushLog(for delivery: FCMDelivery, token: String, app: String,
                                     source: FailedPushSource?) -> FailedPushLog? {
        let verdict = delivery.verdict
        if verdict == .delivered { return nil }
        var log = FailedPushLog(notification: source?.notification, token: token, app: app,
                                failure: verdict.failureText)
        log.platform = gorushPlatformName(2)
        if case .answered(.failed(let error), _, _) = delivery.outcome {
            (log.status, log.reason) = (error.httpStatus, error.reason.text)
        }
        return log
    }
}

/// The health an app without FCM credentials would record FCM's verdicts
/// in: none reach it (`FCMPush.health(of:)`).
@usableFromInline
let unusedHealth: any CredentialHealth = AppHealth()
