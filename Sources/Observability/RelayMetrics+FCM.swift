import Prometheus
import RelayCore

// The Web Push path's FCM series: `toot_relay_fcm_notifications_total{app,
// status,reason}`, apart from APNs' `notifications_total` (whose labels an
// FCM message has no value for: no environment, FCM's codes as reasons).

extension RelayMetrics {
    /// At most this many FCM series (app × status × reason), so that a
    /// misbehaving peer's reasons cannot grow the registry.
    static let maxFCMSeries = 1024

    fileprivate func countFCM(app: String, status: Int, reason: String) {
        let label = String(reason.prefix(64))
        let key = "\(app) \(status) \(label)"
        let counter = fcmNotifications.withLock { cache -> Counter? in
            if let counter = cache[key] { return counter }
            guard cache.count < Self.maxFCMSeries else { return nil }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "toot_relay", metricName: "fcm_notifications", unitName: "total",
                    helpText: "Web Push notifications through FCM by app, relay status and reason (FCM's code or the relay's own)"),
                labels: [("app", app), ("status", String(status)), ("reason", label)])
            cache[key] = counter
            return counter
        }
        counter?.increment()
    }
}

extension RelayMetricsRecorder {
    /// Counts one FCM notification's end: the relay's own reason, else
    /// FCM's code, else "".
    public func countFCM(app: String, status: Int, localReason: LocalReason? = nil, fcmReason: String? = nil) {
        metrics.countFCM(app: app, status: status, reason: localReason?.rawValue ?? fcmReason ?? "")
    }
}
