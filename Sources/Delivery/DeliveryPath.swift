import APNs
import Feedback
import RelayCore

/// The one path every route delivers through — Web Push, gorush's
/// `/api/push`, the APNs-shaped proxy, pyapns' `notify` — on one event loop:
/// a place under MAX_IN_FLIGHT, the send over the loop's APNs client, and
/// what the end of a delivery means beyond the route's own answer: APNs'
/// verdict on the app's credentials (`AppHealth`, decided by
/// `DeliveryOutcome.credentialVerdict`), a dead token into the app's
/// feedback list, the token's failed-push log to the hook. The routes keep
/// what differs between them: building their request, their answer, their
/// metrics series and their log line.
///
/// Thread-confined to its loop, like the sender it is given.
public final class DeliveryPath {
    /// Which failed deliveries the hook hears of.
    public enum HookPosting {
        /// Only a dead token's: the Web Push path's sender (a fediverse
        /// server) has every other answer itself.
        case deadTokens
        /// Every failed token's (gorush's feedback hook), named as
        /// `source` says.
        case everyFailure(FailedPushSource)
        /// Every failed token's log, as `.everyFailure` makes it, handed to
        /// the completion and not posted: the caller posts the one that is
        /// final (an asynchronous push tries a 5xx again, and only its last
        /// try's failure is the token's).
        case everyFailureToCaller(FailedPushSource)

        /// Whether the end of a delivery posts its log to the hook itself.
        @usableFromInline var postsLog: Bool {
            if case .everyFailureToCaller = self { false } else { true }
        }
    }

    /// How `deliver` ended at once.
    public enum Start {
        /// Sent: the completion runs later.
        case sent
        /// Over MAX_IN_FLIGHT: nothing was sent and the completion never
        /// runs; the refusal is recorded like any end of a delivery, and
        /// this is the token's failed-push log (nil for `.deadTokens`).
        case overloaded(FailedPushLog?)
    }

    @usableFromInline let sender: NotificationSender
    @usableFromInline let counters: InFlightDeliveries
    /// Where the end of a delivery records its dead token and posts its log.
    public let feedback: FeedbackSink

    public init(sender: NotificationSender, counters: InFlightDeliveries, feedback: FeedbackSink) {
        (self.sender, self.counters, self.feedback) = (sender, counters, feedback)
    }

    /// Delivers `notification` for `app`. `token` is the device token as the
    /// sender wrote it (a failed-push log echoes it; the feedback list takes
    /// APNs' form, `notification.deviceToken`). Unless it returns
    /// `.overloaded`, `completion` runs exactly once, on this loop, never
    /// inside this call, with APNs' answer and the token's failed-push log
    /// (nil when APNs accepted it, or when `posting` has none for it).
    /// Inlinable: the routes call it once per notification from another
    /// module, and its completion is the one closure the send allocates.
    @inlinable
    public func deliver(_ notification: APNsNotification, app: RelayApp, token: String, posting: HookPosting,
                 completion: @escaping (APNsDelivery, FailedPushLog?) -> Void) -> Start {
        let ending = Ending(appID: app.id, health: app.health, environment: notification.environment,
                            deviceToken: notification.deviceToken, token: token, posting: posting)
        guard counters.beginDelivery() else {
            return .overloaded(ending.record(APNsDelivery(outcome: .overloaded), feedback: feedback))
        }
        // The completion holds what it needs, not the path: a weak reference
        // cost a second allocation per request (the box of the weak
        // reference), and none of these owns the sender.
        let counters = self.counters
        let feedback = self.feedback
        sender.send(notification) { delivery in
            counters.endDelivery()
            completion(delivery, ending.record(delivery, feedback: feedback))
        }
        return .sent
    }

    /// What a delivery's end records, whatever the route: only what that
    /// needs, so the send's completion holds (and retains) little.
    @usableFromInline
    struct Ending {
        let appID: String
        let health: AppHealth
        let environment: APNsEnvironment
        /// APNs' form, for the feedback list.
        let deviceToken: String
        /// As the sender wrote it, for the failed-push log.
        let token: String
        let posting: HookPosting

        @usableFromInline
        init(appID: String, health: AppHealth, environment: APNsEnvironment, deviceToken: String, token: String,
             posting: HookPosting) {
            (self.appID, self.health, self.environment) = (appID, health, environment)
            (self.deviceToken, self.token, self.posting) = (deviceToken, token, posting)
        }

        /// Records the end of `delivery`; returns the token's failed-push log
        /// (posted to the hook, when there is one).
        @usableFromInline
        func record(_ delivery: APNsDelivery, feedback: FeedbackSink) -> FailedPushLog? {
            health.record(delivery.outcome.credentialVerdict)
            let dead = feedback.recordDeadToken(app: appID, environment: environment, token: deviceToken,
                                                delivery: delivery)
            let log: FailedPushLog?
            switch posting {
            case .deadTokens:
                log = dead ? failedPushLog(for: delivery, token: token, app: appID) : nil
            case .everyFailure(let source), .everyFailureToCaller(let source):
                // Most deliveries succeed: nothing of the source (a gorush
                // notification has forty fields) is copied for them.
                if case .apns(200, _, _) = delivery.outcome { return nil }
                log = failedPushLog(for: delivery, token: token, app: appID, notification: source.notification,
                                    sentAPNsID: source.sentAPNsID)
            }
            if let log, posting.postsLog { feedback.post(log) }
            return log
        }
    }
}
