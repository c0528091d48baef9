import Feedback
import FeedbackHook
import Prometheus
import RelayCore
import Locking

/// The provider API's metrics (issue #13), beside the relay's on
/// METRICS_PORT: requests by route and status, notifications by app and
/// result, the feedback lists and the hook. Requests and notifications are
/// counted as they end (a series is made once per label set; the API's
/// labels are bounded: routes, statuses, the apps, Apple's reasons); the
/// feedback and hook counts are cumulative in their own modules and are
/// copied here by the daemon's once-a-second tick.
public final class ProviderMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let published = Locked<Published>(Published())

    private struct Published {
        var feedback: [String: FeedbackCounts] = [:]
        var hook = FeedbackHookCounts()
    }

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// `toot_relay_api_requests_total{route,status}`.
    func countRequest(route: String, status: Int) {
        counter("api_requests", "Provider API requests by route and HTTP status",
                [("route", route), ("status", String(status))]).increment()
    }

    /// `toot_relay_api_notifications_total{app,environment,result}`:
    /// `accepted`, APNs' reason for a refusal (`status-<n>` without one,
    /// `other` for a reason outside Apple's list), or the relay's own
    /// (`timeout`, `unreachable`, `overloaded`).
    func countNotification(app: String, environment: APNsEnvironment, outcome: DeliveryOutcome) {
        let result: String
        switch outcome {
        case .apns(200, _, _): result = "accepted"
        case .apns(let status, let reason?, _): result = APNsReason.documented.contains(reason) ? reason.rawValue : "other-\(status)"
        case .apns(let status, nil, _): result = "status-\(status)"
        case .answerTimedOut: result = "timeout"
        case .connectFailed, .tlsFailed, .streamFailed, .allConnectionsDown: result = "unreachable"
        case .overloaded: result = "overloaded"
        }
        counter("api_notifications", "Notifications sent through the provider API by app, environment and result",
                [("app", app), ("environment", environment.rawValue), ("result", result)]).increment()
    }

    /// Copies the feedback lists' and the hook's counts (the daemon's tick).
    public func publish(feedback: [String: FeedbackCounts], hook: FeedbackHookCounts?) {
        let (previous, previousHook) = published.withLock { state in
            defer { state.feedback = feedback; state.hook = hook ?? state.hook }
            return (state.feedback, state.hook)
        }
        for (app, counts) in feedback {
            let before = previous[app] ?? FeedbackCounts()
            add(counts.recorded - before.recorded, "feedback_recorded", "Dead tokens recorded in the feedback list", app)
            add(counts.dropped - before.dropped, "feedback_dropped",
                "Feedback entries dropped, oldest first, past FEEDBACK_MAX", app)
        }
        guard let hook else { return }
        for (result, now, before) in [("delivered", hook.delivered, previousHook.delivered),
                                      ("retried", hook.retried, previousHook.retried),
                                      ("failed", hook.failed, previousHook.failed),
                                      ("dropped", hook.dropped, previousHook.dropped)] where now > before {
            counter("feedback_hook_posts", "Failed-push logs posted to FEEDBACK_HOOK_URL by result",
                    [("result", result)]).increment(by: Int64(now - before))
        }
    }

    private func add(_ delta: Int, _ name: String, _ help: String, _ app: String) {
        guard delta > 0 else { return }
        counter(name, help, [("app", app)]).increment(by: Int64(delta))
    }

    private func counter(_ name: String, _ help: String, _ labels: [(String, String)]) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(namespace: "toot_relay", metricName: name, unitName: "total", helpText: help),
            labels: labels)
    }
}
