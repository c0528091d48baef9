// The one home of "an APNs delivery failed: what is its failed-push log"
// (WIRE.md §4.2): every path that tells the feedback hook or a gorush caller
// about a token — gorush's `/api/push`, Apple's `/3/device/<token>`,
// pyapns' `notify`, and the Web Push path's dead tokens — builds the entry
// here, so the fields mean the same on all of them. APNs' words (status,
// reason, apns-id, 410's timestamp): a second push service has a mapping
// of its own into the same log.

import APNsCore
import RelayCore

extension APNsPush {
    /// The failed-push log of one token's delivery, nil when APNs accepted
    /// it (200). `status`, `reason` and `apns_id` are APNs' answer;
    /// `timestamp` only for 410 (APNs' time the token stopped being valid);
    /// `error` is `failedPushErrorText(_:)`.
    ///
    /// - `source.notification`: the gorush notification the token came in
    ///   (its `notif_id`, platform and message go in the log); nil for the
    ///   other paths, which have none (message empty, platform `ios`).
    /// - `source.sentAPNsID`: the `apns-id` the relay sent or answered
    ///   with, when it chose one (the proxy): the log's `apns_id` when APNs'
    ///   answer has none or APNs never answered, so the hook's entry
    ///   matches what the caller was told.
    ///
    /// Inlinable: it runs at the end of every delivery, and most
    /// deliveries succeed, which the first line answers where it is called.
    @inlinable
    public static func failedPushLog(for delivery: APNsDelivery, token: String, app: String,
                                     source: FailedPushSource?) -> FailedPushLog? {
        if case .apns(200, _, _) = delivery.outcome { return nil }
        return failureLog(for: delivery, token: token, app: app, source: source)
    }

    @usableFromInline
    static func failureLog(for delivery: APNsDelivery, token: String, app: String, source: FailedPushSource?)
        -> FailedPushLog {
        let error = failedPushErrorText(delivery.outcome)
        var log = FailedPushLog(notification: source?.notification, token: token, app: app, failure: error)
        let sentAPNsID = source?.sentAPNsID
        switch delivery.outcome {
        case .apns(let status, let reason, let apnsID):
            (log.status, log.reason, log.apnsID) = (status, reason?.rawValue, apnsID ?? sentAPNsID)
            log.timestamp = status == 410 ? delivery.unregisteredTimestamp : nil
        case .answerTimedOut, .connectFailed, .tlsFailed, .streamFailed, .allConnectionsDown, .overloaded:
            log.apnsID = sentAPNsID
        }
        return log
    }
}

/// A failed-push log's `error` for an outcome: APNs' reason when it gave one
/// (gorush's `errors.New(res.Reason)`, notify/notification_apns.go), else a
/// sentence — for a status without a reason, or a failure of the relay's
/// own before any answer.
public func failedPushErrorText(_ outcome: DeliveryOutcome) -> String {
    switch outcome {
    case .apns(_, let reason?, _): reason.rawValue
    case .apns(let status, nil, _): "APNs answered \(status)"
    case .answerTimedOut: "no answer from APNs in time"
    case .connectFailed(let detail): "cannot connect to APNs: \(detail)"
    case .tlsFailed(let detail): "TLS with APNs failed: \(detail)"
    case .streamFailed(let detail): "the APNs stream failed: \(detail)"
    case .allConnectionsDown: "no connection to APNs is up"
    case .overloaded: "the relay is over MAX_IN_FLIGHT"
    }
}
