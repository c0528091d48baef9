import APNsCore
import Feedback
import RelayCore

/// The one path every route delivers through — Web Push, gorush's
/// `/api/push`, the APNs-shaped proxy, pyapns' `notify` — on one event loop,
/// through one push service (`PushService`: APNs today): a place under
/// MAX_IN_FLIGHT, the send over the loop's client, and what the end of a
/// delivery means beyond the route's own answer: the service's verdict on
/// the app's credentials (`AppHealth`), a dead token into the app's
/// feedback list, the token's failed-push log to the hook. The routes keep
/// what differs between them: building their request, their answer, their
/// metrics series and their log line.
///
/// Thread-confined to its loop, like the client it is given.
public final class DeliveryPath<Service: PushService> {
    @usableFromInline let service: Service
    @usableFromInline let counters: InFlightDeliveries
    /// Where the end of a delivery records its dead token and posts its log.
    public let feedback: FeedbackSink

    public init(service: Service, counters: InFlightDeliveries, feedback: FeedbackSink) {
        (self.service, self.counters, self.feedback) = (service, counters, feedback)
    }

    /// Delivers `notification` for `app`. `token` is the device token as the
    /// sender wrote it (a failed-push log echoes it; the feedback list takes
    /// the service's form, from the notification). Unless it returns
    /// `.overloaded`, `completion` runs exactly once, on this loop, never
    /// inside this call, with the service's answer and the token's
    /// failed-push log (nil when the service accepted it, or when `posting`
    /// has none for it).
    /// Inlinable: the routes call it once per notification from another
    /// module, where it is specialised for their service, and its
    /// completion is the one closure the send allocates.
    @inlinable
    public func deliver(_ notification: Service.Notification, app: RelayApp, token: String, posting: HookPosting,
                        completion: @escaping (Service.Delivery, FailedPushLog?) -> Void) -> DeliveryStart {
        let end = DeliveryEnd<Service>(appID: app.id, health: Service.health(of: app), token: token, posting: posting,
                                       counters: counters, feedback: feedback, completion: completion)
        guard counters.beginDelivery() else {
            return .overloaded(end.record(Service.overloaded, recipient: Service.recipient(of: notification)))
        }
        service.send(notification, then: end)
        return .sent
    }
}

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
    /// try's failure is the token's). Its dead token is not recorded
    /// either: the caller records it with the notification's end (a
    /// fleet's entry appends it to the feedback list in Redis with its
    /// acknowledgement, so the entry never leaves the stream without it).
    case everyFailureToCaller(FailedPushSource)
}

/// How `DeliveryPath.deliver` ended at once.
public enum DeliveryStart {
    /// Sent: the completion runs later.
    case sent
    /// Over MAX_IN_FLIGHT: nothing was sent and the completion never
    /// runs; the refusal is recorded like any end of a delivery, and
    /// this is the token's failed-push log (nil for `.deadTokens`).
    case overloaded(FailedPushLog?)
}

/// The end of one delivery, whatever the route: what it records (the
/// app's health, a dead token, the failed-push log) and the route's
/// completion. The service's `send` hands it the answer, with the
/// notification's recipient, from the one closure it gives its client:
/// formed there, in the service's own code, that closure takes the client's
/// answer as the client passes it (a closure formed here, in generic code,
/// took it indirectly, and the client's call then went through a
/// reabstraction thunk: an allocation more per notification, measured with
/// callgrind). No field's type depends on the service: with the recipient
/// in it, each copy went through the struct's value witnesses (callgrind:
/// about 380 instructions more per Web Push notification, 120 per provider
/// one). It holds what the end needs, not the path: a weak reference to the
/// path cost a second allocation per request (the box of the weak
/// reference).
public struct DeliveryEnd<Service: PushService> {
    @usableFromInline let appID: String
    @usableFromInline let health: any CredentialHealth
    /// As the sender wrote it, for the failed-push log.
    @usableFromInline let token: String
    @usableFromInline let posting: HookPosting
    @usableFromInline let counters: InFlightDeliveries
    @usableFromInline let feedback: FeedbackSink
    @usableFromInline let completion: (Service.Delivery, FailedPushLog?) -> Void

    @inlinable
    init(appID: String, health: any CredentialHealth, token: String, posting: HookPosting, counters: InFlightDeliveries,
         feedback: FeedbackSink, completion: @escaping (Service.Delivery, FailedPushLog?) -> Void) {
        (self.appID, self.health, self.token, self.posting) = (appID, health, token, posting)
        (self.counters, self.feedback, self.completion) = (counters, feedback, completion)
    }

    /// The service answered the notification sent to `recipient`
    /// (`PushService.recipient(of:)`): the delivery's place under
    /// MAX_IN_FLIGHT is given back, its end recorded, and the route told.
    /// Once, on the loop.
    @inlinable
    public func finish(_ delivery: Service.Delivery, recipient: Service.Recipient) {
        counters.endDelivery()
        completion(delivery, record(delivery, recipient: recipient))
    }

    /// Records the end of `delivery`; returns the token's failed-push log
    /// (posted to the hook, when there is one). `.everyFailureToCaller`
    /// leaves both the log and the dead token to the caller.
    @inlinable
    func record(_ delivery: Service.Delivery, recipient: Service.Recipient) -> FailedPushLog? {
        health.record(Service.credentialVerdict(of: delivery))
        let log: FailedPushLog?
        switch posting {
        case .deadTokens:
            guard let deadToken = Service.deadToken(in: delivery, recipient: recipient, app: appID) else { return nil }
            feedback.record(deadToken)
            log = Service.failedPushLog(for: delivery, token: token, app: appID, source: nil)
        case .everyFailure(let source):
            if let deadToken = Service.deadToken(in: delivery, recipient: recipient, app: appID) {
                feedback.record(deadToken)
            }
            log = Service.failedPushLog(for: delivery, token: token, app: appID, source: source)
        case .everyFailureToCaller(let source):
            return Service.failedPushLog(for: delivery, token: token, app: appID, source: source)
        }
        if let log { feedback.post(log) }
        return log
    }
}
