import ProviderAPI
import RelayCore

/// What every provider API route (gorush's `/api/push`, Apple's
/// `/3/device/<token>`, pyapns' `notify`) does once one token's delivery
/// ended, in one place so the routes cannot drift apart: the
/// notification metric, APNs' verdict on the app's credential, a dead token
/// into the feedback list, the failed-push log (`failedPushLog(for:…)`) to
/// the hook. One per handler, used on its loop only.
final class ProviderDeliveries {
    let feedback: FeedbackSink
    /// This loop's notification counts (with METRICS_PORT).
    let metrics: ProviderMetricsRecorder?

    init(feedback: FeedbackSink, metrics: ProviderMetricsRecorder?) {
        (self.feedback, self.metrics) = (feedback, metrics)
    }

    /// Records the end of `apns`'s delivery (or its refusal before sending,
    /// `.overloaded`) and returns the token's failed-push log, nil when
    /// APNs accepted it. `token` is the token as the sender wrote it (the
    /// log echoes that); the feedback list takes APNs' form, `apns.deviceToken`.
    @discardableResult
    func record(_ delivery: APNsDelivery, of apns: APNsNotification, app: RelayApp, token: String,
                notification: ProviderNotification? = nil, sentAPNsID: String? = nil) -> FailedPushLog? {
        metrics?.countNotification(app: app.id, environment: apns.environment, outcome: delivery.outcome)
        if case .apns(let status, _, _) = delivery.outcome {
            app.health.record(rejected: status == 403, succeeded: status == 200)
        }
        feedback.recordDeadToken(app: app.id, environment: apns.environment, token: apns.deviceToken, delivery: delivery)
        guard let log = failedPushLog(for: delivery, token: token, app: app.id, notification: notification,
                                      sentAPNsID: sentAPNsID)
        else { return nil }
        feedback.post(log)
        return log
    }
}
