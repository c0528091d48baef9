import APNsCore
import APNs
import FCMCore
import Locking
import Prometheus

/// The provider API's metrics, beside the relay's on
/// METRICS_PORT: requests by route and status, notifications by app and
/// result, the feedback lists and the hook. Requests and notifications are
/// counted as they end, by each loop's `ProviderMetricsRecorder` (a series
/// is made once per label set; the API's labels are bounded: routes,
/// statuses, the apps, Apple's reasons); the
/// feedback, hook and asynchronous queue counts are cumulative in their own
/// modules and are copied here, as numbers, by the daemon's once-a-second
/// tick (Observability sits below those modules, so they can log through
/// it).
public final class ProviderMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let published = Locked<Published>(Published())

    private struct Published {
        var feedback: [String: (recorded: Int, dropped: Int)] = [:]
        var hook = HookPostsSnapshot()
        var async = AsyncCountsSnapshot()
    }

    private struct HookPostsSnapshot {
        var delivered = 0, retried = 0, failed = 0, dropped = 0
    }

    private struct AsyncCountsSnapshot {
        var delivered = 0, failed = 0, retried = 0, claimed = 0
    }

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// `toot_relay_api_requests_total{route,status}`'s series for one
    /// route and status (a registry lookup: callers keep it).
    fileprivate func requestCounter(route: String, status: Int) -> Counter {
        counter("api_requests", "Provider API requests by route and HTTP status",
                [("route", route), ("status", String(status))])
    }

    /// A recorder for one loop's handler (its series cache is loop-confined).
    public func makeRecorder() -> ProviderMetricsRecorder { ProviderMetricsRecorder(metrics: self) }

    /// `toot_relay_api_notifications_total{app,service,environment,result}`'s
    /// series for one label set (`environment` empty for FCM, as on the Web
    /// Push series: `RelayMetrics.fcmEnvironment`); the registry hands back
    /// the same counter for the same labels (a lookup by name and labels:
    /// callers keep it).
    fileprivate func notificationCounter(app: String, service: PushServiceName, environment: String,
                                         result: String) -> Counter {
        counter("api_notifications",
                "Notifications sent through the provider API by app, push service, environment (APNs') and result",
                [("app", app), ("service", service.rawValue), ("environment", environment), ("result", result)])
    }

    /// The `result` labels a loop keeps its series for: `accepted`, the
    /// relay's own (`timeout`, `unreachable`, `overloaded`), then Apple's
    /// documented reasons.
    static let commonResults = ["accepted", "timeout", "unreachable", "overloaded"]
        + APNsReason.documented.map(\.rawValue)

    /// A notification's `result` label: `accepted`, APNs' reason for a
    /// refusal (`status-<n>` without one, `other-<n>` for a reason outside
    /// Apple's list), or the relay's own (`timeout`, `unreachable`,
    /// `overloaded`).
    static func result(of outcome: DeliveryOutcome) -> NotificationResult {
        switch outcome {
        case .apns(200, _, _): .common(0)
        case .apns(let status, let reason?, _):
            APNsReason.documented.firstIndex(of: reason).map { .common(4 + $0) } ?? .rare("other-\(status)")
        case .apns(let status, nil, _): .rare("status-\(status)")
        case .answerTimedOut: .common(1)
        case .connectFailed, .tlsFailed, .streamFailed, .allConnectionsDown: .common(2)
        case .overloaded: .common(3)
        }
    }

    /// The `result` labels of FCM's series a loop keeps: `accepted`, the
    /// relay's own (as APNs', then `no_access_token`: the token endpoint
    /// refused the service account or answered what the relay cannot read,
    /// `token_endpoint_unavailable`), then FCM's named codes.
    static let fcmCommonResults = ["accepted", "timeout", "unreachable", "overloaded", "no_access_token",
                                   "token_endpoint_unavailable"] + FCMReason.named.map(\.text)

    /// An FCM send's `result` label: `accepted`, FCM's code for a refusal
    /// (`other-<n>` for a code outside FCM's list), or the relay's own.
    static func result(of outcome: FCMOutcome) -> NotificationResult {
        switch outcome {
        case .answered(.sent, _, _): .common(0)
        case .answered(.failed(let error), _, _):
            FCMReason.named.firstIndex(of: error.reason).map { .common(6 + $0) } ?? .rare("other-\(error.httpStatus)")
        case .noAccessToken(let verdict): .common(verdict.webPushStatus == 502 ? 4 : 5)
        case .answerTimedOut: .common(1)
        case .connectFailed, .tlsFailed, .streamFailed, .allConnectionsDown: .common(2)
        case .overloaded: .common(3)
        }
    }

    /// Copies the feedback lists' counts per app (the daemon's tick): dead
    /// tokens recorded, and entries dropped past FEEDBACK_MAX, since start.
    public func publish(feedback: [String: (recorded: Int, dropped: Int)]) {
        let previous = published.withLock { state in
            defer { state.feedback = feedback }
            return state.feedback
        }
        for (app, counts) in feedback {
            let before = previous[app] ?? (0, 0)
            add(counts.recorded - before.recorded, "feedback_recorded", "Dead tokens recorded in the feedback list", app)
            add(counts.dropped - before.dropped, "feedback_dropped",
                "Feedback entries dropped, oldest first, past FEEDBACK_MAX", app)
        }
    }

    /// Copies the feedback hook's counts since start (the daemon's tick,
    /// with FEEDBACK_HOOK_URL): posts delivered, retried, failed, and logs
    /// dropped before a post.
    public func publishHookPosts(delivered: Int, retried: Int, failed: Int, dropped: Int) {
        let now = HookPostsSnapshot(delivered: delivered, retried: retried, failed: failed, dropped: dropped)
        let before = published.withLock { state in
            defer { state.hook = now }
            return state.hook
        }
        // Every result's series from the first tick on, at 0 until it
        // happens: a counter that first appears at 89 has no increase a rule
        // can see (Prometheus' increase() needs two samples of a series).
        for (result, now, before) in [("delivered", now.delivered, before.delivered),
                                      ("retried", now.retried, before.retried),
                                      ("failed", now.failed, before.failed),
                                      ("dropped", now.dropped, before.dropped)] {
            let series = counter("feedback_hook_posts", "Failed-push logs posted to FEEDBACK_HOOK_URL by result",
                                 [("result", result)])
            if now > before { series.increment(by: Int64(now - before)) }
        }
    }

    /// `toot_relay_feedback_unflushed`: with a fleet, the feedback entries
    /// this instance holds that Redis has not confirmed (the daemon's tick);
    /// growing while Redis is away, back to 0 once it is there.
    public func publish(feedbackUnflushed: Int) {
        gauge("feedback_unflushed", "Feedback entries this instance holds for Redis, not yet written there")
            .set(to: Double(feedbackUnflushed))
    }

    /// The asynchronous `/api/push`'s gauges and counters (the daemon's
    /// tick): `toot_relay_api_async_queued` (accepted and not done, per
    /// token: `queued`), `toot_relay_api_async_in_flight` (tries waiting for
    /// APNs: `inFlight`) and `toot_relay_api_async_total{result}`
    /// (`delivered`, `failed`, `retried`, counts since start), every series
    /// from the first tick on. With a fleet's queue (`REDIS_URL`), `queued`
    /// is the fleet's stream length (every instance shows the same), and
    /// `claimed` (nil without a fleet) counts, as `result="claimed"`, what
    /// this instance took over from others.
    public func publishAsync(queued: Int, inFlight: Int, delivered: Int, failed: Int, retried: Int, claimed: Int?) {
        let current = AsyncCountsSnapshot(delivered: delivered, failed: failed, retried: retried, claimed: claimed ?? 0)
        let previous = published.withLock { state in
            defer { state.async = current }
            return state.async
        }
        gauge("api_async_queued", "Asynchronous notifications accepted and not done, per device token")
            .set(to: Double(queued))
        gauge("api_async_in_flight", "Asynchronous notifications' tries waiting for APNs").set(to: Double(inFlight))
        for (result, now, before) in [("delivered", current.delivered, previous.delivered),
                                      ("failed", current.failed, previous.failed),
                                      ("retried", current.retried, previous.retried)]
                + (claimed == nil ? [] : [("claimed", current.claimed, previous.claimed)]) {
            let series = counter("api_async", "Asynchronous notifications by result: delivered, failed, or a try retried",
                                 [("result", result)])
            if now > before { series.increment(by: Int64(now - before)) }
        }
    }

    private func gauge(_ name: String, _ help: String) -> Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "toot_relay", metricName: name, unitName: "", helpText: help),
            labels: [])
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

/// A notification's `result` label: one of `ProviderMetrics.commonResults`
/// (by index), or a status APNs gave without a reason or with one outside
/// Apple's list.
enum NotificationResult: Equatable {
    case common(Int)
    case rare(String)
}

/// The per-loop side of `ProviderMetrics`' request and notification
/// counts: the registry's lookup by name and labels cost about 12,900
/// instructions a notification (callgrind, stripped release relay,
/// THREADS=1, wrk 15 s of `provider-push.lua`, 100 tokens a request, a
/// zero-request run subtracted: 86,300 with METRICS_PORT against 73,500
/// without) and 10,500 a request (one request is one notification on the
/// proxy's route), so each loop keeps the series it used: requests by
/// route and status, notifications by app id and an index of environment ×
/// common result (an `AppCounterCache`; FCM's in one of their own, by
/// common result), and the request counted last
/// beside its dictionary. Now, two runs: +311
/// and +128 instructions a notification with METRICS_PORT (runs without it
/// differ by up to 1,100 among themselves), and the symbol profile puts 213
/// a notification in `countNotification` and 20 in `countRequest`.
/// Bounded: the routes × the statuses they answer; the apps × (2
/// environments × APNs' common results + FCM's common results), emptied by a reload (refilled on
/// first use) so an app the reload dropped does not stay. Confined to its
/// loop, like its handler.
public final class ProviderMetricsRecorder {
    private let metrics: ProviderMetrics
    private var notifications = AppCounterCache(slots: 2 * ProviderMetrics.commonResults.count)
    private var fcmNotifications = AppCounterCache(slots: ProviderMetrics.fcmCommonResults.count)
    private var requests: [RequestSeries: Counter] = [:]
    private var lastRequest: (series: RequestSeries, counter: Counter)?

    private struct RequestSeries: Hashable {
        let route: String
        let status: Int
    }

    fileprivate init(metrics: ProviderMetrics) {
        self.metrics = metrics
    }

    public func countRequest(route: String, status: Int) {
        let series = RequestSeries(route: route, status: status)
        if let lastRequest, lastRequest.series == series { return lastRequest.counter.increment() }
        let counter = requests[series] ?? metrics.requestCounter(route: route, status: status)
        requests[series] = counter
        lastRequest = (series, counter)
        counter.increment()
    }

    public func countNotification(app: String, environment: APNsEnvironment, outcome: DeliveryOutcome) {
        let slot: Int
        switch ProviderMetrics.result(of: outcome) {
        case .common(let index): slot = index
        case .rare(let result):
            // Rare by nature (APNs names its refusals): looked up each time.
            return metrics.notificationCounter(app: app, service: .apns, environment: environment.rawValue,
                                               result: result).increment()
        }
        let index = (environment == .production ? 0 : 1) * ProviderMetrics.commonResults.count + slot
        notifications.counter(app: app, slot: index) {
            metrics.notificationCounter(app: app, service: .apns, environment: environment.rawValue,
                                        result: ProviderMetrics.commonResults[slot])
        }.increment()
    }

    /// Counts an FCM send's end (gorush platform 2).
    public func countNotification(app: String, fcm outcome: FCMOutcome) {
        let slot: Int
        switch ProviderMetrics.result(of: outcome) {
        case .common(let index): slot = index
        case .rare(let result):
            return metrics.notificationCounter(app: app, service: .fcm, environment: RelayMetrics.fcmEnvironment,
                                               result: result).increment()
        }
        fcmNotifications.counter(app: app, slot: slot) {
            metrics.notificationCounter(app: app, service: .fcm, environment: RelayMetrics.fcmEnvironment,
                                        result: ProviderMetrics.fcmCommonResults[slot])
        }.increment()
    }

    /// How many apps' series this loop keeps (an app's APNs and FCM series
    /// count apart).
    var cachedApps: Int { notifications.apps + fcmNotifications.apps }

    /// The apps were replaced (a reload): forget every app's series.
    public func appsReplaced() {
        notifications.removeAll()
        fcmNotifications.removeAll()
    }
}
