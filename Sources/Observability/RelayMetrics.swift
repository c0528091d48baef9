import APNs
import APNsCore
import HTTP1
import Locking
import Prometheus
import RelayCore
import VAPID

/// The relay's Prometheus metrics (swift-prometheus), served by
/// the metrics listener (`MetricsHandler`) when `METRICS_PORT` is set.
///
/// Hot-path cost: one atomic add per notification and one histogram record
/// per APNs answer. The series are found by small integer indices into
/// arrays made at startup (no string building, no dictionary lookup per
/// request); only an outcome never seen before (an APNs reason outside the
/// documented list) creates a series, once. Gauges that mirror state kept
/// elsewhere (in flight, open connections, APNs connections and the
/// notifications waiting for a stream, credential expiry) are set when
/// scraped or by the daemon's once-a-second tick, not per request. Measured with callgrind on the release binary (one thread,
/// 2,000 keep-alive POSTs to the emulator, startup subtracted): 256,775
/// instructions per notification without METRICS_PORT, 256,968 with it:
/// +193 (0.08 %).
public final class RelayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// Series made outside the startup tables (APNs reasons not in Apple's
    /// documented list, FCM codes not in FCM's), bounded.
    private let lateNotifications = Locked<[String: Counter]>([:])
    /// `toot_relay_apns_latency_seconds{environment}`: send to APNs answer
    /// (not per app: a histogram per app would multiply the series by 15).
    private let apnsLatency: [DurationHistogram]
    private let inFlightGauge: Gauge
    private let openConnectionsGauge: Gauge
    private let apnsConnectionGauges: [Gauge]
    private let apnsQueuedGauge: Gauge
    /// `apns_connection_events_total` by event, and `apns_resends_total`,
    /// with the totals they were last set to (the clients' counters are
    /// sums; a Prometheus counter only adds).
    private let apnsEvents: Locked<(counters: [Counter], resends: Counter, last: APNsCounters)>
    private let connections: HTTP1ListenerCounters
    /// The Web Push listener's notifications in flight, read when scraped.
    private let inFlight: @Sendable () -> Int
    /// The provider API's notifications in flight (its own `MAX_IN_FLIGHT`),
    /// with its gauge; nil without `API_PORT`.
    private let apiInFlight = Locked<(count: @Sendable () -> Int, gauge: Gauge)?>(nil)
    /// The apps served now (their health is read when scraped).
    private let apps = Locked<RelayApps>(RelayApps(defaultApp: nil))
    /// The per-app gauges made so far, so a reload that drops an app (or an
    /// app's environment) takes its series out of the exposition: a gauge
    /// left at its last value would keep an expiry or rejection alert firing
    /// for an app the relay no longer serves.
    private let appGauges = Locked<AppGauges>(AppGauges())

    private struct AppGauges {
        /// `credential_expiry_timestamp_seconds` by app id and environment.
        var expiry: [AppEnvironment: Gauge] = [:]
        /// `apns_credentials_rejected` by app id.
        var rejected: [String: Gauge] = [:]
        /// `fcm_credentials_rejected` by app id, for the apps with FCM credentials.
        var fcmRejected: [String: Gauge] = [:]
    }

    private struct AppEnvironment: Hashable {
        var app: String
        var environment: APNsEnvironment
    }

    /// The relay statuses a notification can end with (other statuses get a
    /// series of their own on first use).
    static let statusSlots = [201, 400, 410, 413, 415, 429, 502, 503, 504]
    /// The `reason` label values: "" (delivered, or an APNs answer without
    /// a reason), the relay's own reasons, then Apple's documented ones.
    static let reasonSlots = [""] + LocalReason.allCases.map(\.rawValue) + APNsReason.documented.map(\.rawValue)
    static let environments: [APNsEnvironment] = [.production, .development]
    static let seriesCount = environments.count * statusSlots.count * reasonSlots.count

    /// The buckets of the APNs latency histogram: Apple answers in tens of
    /// milliseconds; the answer timeout is 8 s by default.
    static let latencyBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// `connections` and `inFlight`: the Web Push listener's, whose gauges
    /// (sender connections, requests in flight) are set when scraped;
    /// `maxInFlight`: its cap (`MAX_IN_FLIGHT`). The count is read through
    /// a closure: Observability sits below the delivery that keeps it.
    public init(connections: HTTP1ListenerCounters, maxInFlight: Int, inFlight: @escaping @Sendable () -> Int,
                registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        self.connections = connections
        self.inFlight = inFlight
        apnsLatency = Self.environments.map { environment in
            registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(namespace: "toot_relay", metricName: "apns_latency",
                                                 unitName: "seconds",
                                                 helpText: "Time from sending a notification to APNs' answer"),
                labels: [("environment", environment.rawValue)], buckets: Self.latencyBuckets)
        }
        func gauge(_ name: String, unit: String = "", _ help: String, labels: [(String, String)] = []) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(namespace: "toot_relay", metricName: name, unitName: unit,
                                                 helpText: help),
                labels: labels)
        }
        inFlightGauge = gauge("requests_in_flight", "Notifications waiting for APNs")
        // The cap as a gauge of its own, so that an alert can say "near the
        // cap" as a ratio whatever MAX_IN_FLIGHT is set to.
        gauge("max_in_flight", "MAX_IN_FLIGHT: notifications in flight (per listener) beyond which the relay answers 503")
            .set(to: Double(maxInFlight))
        openConnectionsGauge = gauge("sender_connections", "Open connections from Web Push senders")
        apnsEvents = Locked((
            counters: Self.apnsConnectionEvents.map { event, _ in
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "toot_relay", metricName: "apns_connection_events", unitName: "total",
                        helpText: "APNs connection attempts, attempts that failed, ready connections lost, GOAWAYs received"),
                    labels: [("event", event)])
            },
            resends: registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "toot_relay", metricName: "apns_resends", unitName: "total",
                    helpText: "Notifications sent to APNs again on another stream (APNs provably never processed them)")),
            last: APNsCounters()))
        apnsConnectionGauges = APNsConnectionState.allCases.map { state in
            gauge("apns_connections", "Connections to APNs by state (all threads, both environments)",
                  labels: [("state", state.rawValue)])
        }
        apnsQueuedGauge = gauge("apns_queued",
                                "Notifications waiting for an APNs stream: a connection opening, or every stream busy "
                                    + "(all threads, both environments)")
    }

    /// Serves the provider API's notifications in flight from now on
    /// (`toot_relay_api_notifications_in_flight`, `count` read when scraped).
    public func setAPIInFlight(_ count: @escaping @Sendable () -> Int) {
        let gauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "toot_relay", metricName: "api_notifications_in_flight",
                                             unitName: "",
                                             helpText: "Provider API notifications waiting for APNs"),
            labels: [])
        apiInFlight.withLock { $0 = (count, gauge) }
    }

    /// Serves the metrics of `apps` from now on (start and every reload):
    /// delivered, per app and environment (and per app through FCM), shows
    /// as 0 from the start; the
    /// other outcomes appear when they first happen (so the exposition does
    /// not list hundreds of impossible combinations).
    /// The gauges of apps, or environments, no longer served leave the
    /// exposition.
    public func setApps(_ apps: RelayApps) {
        var served = Set<AppEnvironment>()
        for app in apps.all {
            for environment in Self.environments where app.credential(for: environment) != nil {
                _ = notificationCounter(app: app.id, service: .apns, environment: environment.rawValue, status: 201,
                                        reason: "")
                served.insert(AppEnvironment(app: app.id, environment: environment))
            }
            if app.fcm != nil {
                _ = notificationCounter(app: app.id, service: .fcm, environment: Self.fcmEnvironment, status: 201,
                                        reason: "")
            }
        }
        let apnsIDs = Set(apps.all.filter(\.servesAPNs).map(\.id))
        let fcmIDs = Set(apps.all.filter { $0.fcm != nil }.map(\.id))
        // Under the lock a scrape makes the rejection gauges under, so it
        // cannot make one again for an app this takes away.
        appGauges.withLock { gauges in
            for (key, gauge) in gauges.expiry where !served.contains(key) {
                registry.unregisterGauge(gauge)
                gauges.expiry[key] = nil
            }
            for (id, gauge) in gauges.rejected where !apnsIDs.contains(id) {
                registry.unregisterGauge(gauge)
                gauges.rejected[id] = nil
            }
            for (id, gauge) in gauges.fcmRejected where !fcmIDs.contains(id) {
                registry.unregisterGauge(gauge)
                gauges.fcmRejected[id] = nil
            }
            self.apps.withLock { $0 = apps }
        }
    }

    /// One app's 0/1 rejection gauge named `metricName`, made on first use.
    private func rejectionGauge(_ made: Gauge?, _ metricName: String, app: String, _ help: String) -> Gauge {
        made ?? registry.makeGauge(
            // A 0/1 gauge has no unit; an empty one adds nothing to the name.
            descriptor: MetricNameDescriptor(namespace: "toot_relay", metricName: metricName, unitName: "", helpText: help),
            labels: [("app", app)])
    }

    /// A recorder for one event loop (its series cache is loop-confined).
    public func makeRecorder() -> RelayMetricsRecorder { RelayMetricsRecorder(metrics: self) }

    /// The series of one (app, service, environment, status, reason); the
    /// registry hands back the same counter for the same labels.
    func notificationCounter(app: String, service: PushServiceName, environment: String, status: Int,
                             reason: String) -> Counter {
        registry.makeCounter(descriptor: Self.notificationsDescriptor,
                             labels: [("app", app), ("service", service.rawValue), ("environment", environment),
                                      ("status", String(status)), ("reason", reason)])
    }

    private static var notificationsDescriptor: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "toot_relay", metricName: "notifications", unitName: "total",
            helpText: "Web Push notifications by app, push service, environment (APNs'), relay status and reason "
                + "(the service's reason or the relay's own)")
    }

    // MARK: per request (event loop threads)

    /// An outcome outside the table made at startup: its series is made
    /// once and kept (bounded: at most 256 such series, reasons cut to 64
    /// characters, so a misbehaving peer cannot grow the registry).
    func countRare(app: String, service: PushServiceName, environment: String, status: Int, reason: String) {
        let label = String(reason.prefix(64))
        let key = "\(app) \(service.rawValue) \(environment) \(status) \(label)"
        let counter = lateNotifications.withLock { cache -> Counter? in
            if let counter = cache[key] { return counter }
            guard cache.count < 256 else { return nil }
            let counter = notificationCounter(app: app, service: service, environment: environment, status: status,
                                              reason: label)
            cache[key] = counter
            return counter
        }
        counter?.increment()
    }

    fileprivate func recordAPNsLatency(environment: APNsEnvironment, nanoseconds: UInt64) {
        apnsLatency[environment == .production ? 0 : 1].recordNanoseconds(Int64(clamping: nanoseconds))
    }

    static func statusSlot(_ status: Int) -> Int? {
        switch status {
        case 201: 0
        case 400: 1
        case 410: 2
        case 413: 3
        case 415: 4
        case 429: 5
        case 502: 6
        case 503: 7
        case 504: 8
        default: nil
        }
    }

    // MARK: state gauges (any thread)

    /// Sets an app's credential expiry gauge for one environment (unix
    /// seconds; 0 for token auth).
    public func setCredentialExpiry(app: String, environment: APNsEnvironment, unixSeconds: Int) {
        let gauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "toot_relay", metricName: "credential_expiry_timestamp", unitName: "seconds",
                helpText: "Unix time when an app's APNs client certificate expires (0 with token auth)"),
            labels: [("app", app), ("environment", environment.rawValue)])
        gauge.set(to: Double(unixSeconds))
        appGauges.withLock { $0.expiry[AppEnvironment(app: app, environment: environment)] = gauge }
    }

    /// Sets the APNs connection gauges from the sum over every loop's client.
    public func setAPNsConnections(_ byState: [APNsConnectionState: Int]) {
        for (index, state) in APNsConnectionState.allCases.enumerated() {
            apnsConnectionGauges[index].set(to: Double(byState[state] ?? 0))
        }
    }

    /// The `event` label of `toot_relay_apns_connection_events_total`, each
    /// with its count in the clients' counters.
    static let apnsConnectionEvents: [(String, KeyPath<APNsCounters, Int> & Sendable)] = [
        ("attempted", \.connectionsOpened), ("connect_failed", \.connectFailures), ("lost", \.connectionsLost),
        ("goaway", \.goAwaysReceived),
    ]

    /// Adds to the APNs event counters what the sum over every loop's
    /// client counted since the last call.
    public func setAPNsCounters(_ counters: APNsCounters) {
        apnsEvents.withLock { events in
            for (index, (_, path)) in Self.apnsConnectionEvents.enumerated() {
                let added = counters[keyPath: path] - events.last[keyPath: path]
                if added > 0 { events.counters[index].increment(by: Int64(added)) }
            }
            let resent = counters.resent - events.last.resent
            if resent > 0 { events.resends.increment(by: Int64(resent)) }
            events.last = counters
        }
    }

    /// Sets the gauge of notifications waiting for an APNs stream from the
    /// sum over every loop's client.
    public func setAPNsQueued(_ count: Int) {
        apnsQueuedGauge.set(to: Double(count))
    }

    /// The exposition (text format 0.0.4), gauges of shared counters
    /// refreshed first.
    public func exposition() -> [UInt8] {
        inFlightGauge.set(to: Double(inFlight()))
        openConnectionsGauge.set(to: Double(connections.openConnections))
        if let api = apiInFlight.withLock({ $0 }) {
            api.gauge.set(to: Double(api.count()))
        }
        appGauges.withLock { gauges in
            for app in apps.withLock({ $0.all }) {
                if app.servesAPNs {
                    let gauge = rejectionGauge(
                        gauges.rejected[app.id], "apns_credentials_rejected", app: app.id,
                        "1 while APNs rejects an app's credentials (403, or an expired certificate), else 0")
                    gauge.set(to: app.health.credentialsRejected ? 1 : 0)
                    gauges.rejected[app.id] = gauge
                }
                if let fcm = app.fcm {
                    let gauge = rejectionGauge(gauges.fcmRejected[app.id], "fcm_credentials_rejected", app: app.id,
                                               "1 while FCM or its token endpoint rejects an app's service account, else 0")
                    gauge.set(to: fcm.health.credentialsRejected ? 1 : 0)
                    gauges.fcmRejected[app.id] = gauge
                }
            }
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}

/// The per-loop side of `RelayMetrics`: finds a notification's series by
/// the app's id and an integer index into a cache filled on first use
/// (`AppCounterCache`), so a request costs at most a small dictionary
/// read, an array read and an atomic add.
/// Confined to its event loop.
public final class RelayMetricsRecorder {
    let metrics: RelayMetrics
    /// Per app id (a removed app's entry stays: its counters live on in the
    /// registry anyway, and ids are few): APNs' series, and FCM's.
    private var series = AppCounterCache(slots: RelayMetrics.seriesCount)
    var fcmSeries = AppCounterCache(slots: RelayMetrics.fcmSeriesCount)

    init(metrics: RelayMetrics) {
        self.metrics = metrics
    }

    /// Counts one APNs notification's end: the relay's own reason, else the
    /// APNs reason if any, else "".
    public func count(app: String, environment: APNsEnvironment, status: Int, localReason: LocalReason? = nil,
               apnsReason: APNsReason? = nil) {
        var reasonSlot = localReason?.slot ?? 0
        if let apnsReason {
            guard let index = APNsReason.documented.firstIndex(of: apnsReason) else {
                metrics.countRare(app: app, service: .apns, environment: environment.rawValue, status: status,
                                  reason: apnsReason.rawValue)
                return
            }
            reasonSlot = 1 + LocalReason.allCases.count + index
        }
        guard let statusSlot = RelayMetrics.statusSlot(status) else {
            metrics.countRare(app: app, service: .apns, environment: environment.rawValue, status: status,
                              reason: RelayMetrics.reasonSlots[reasonSlot])
            return
        }
        let environmentSlot = environment == .production ? 0 : 1
        let index = (environmentSlot * RelayMetrics.statusSlots.count + statusSlot) * RelayMetrics.reasonSlots.count
            + reasonSlot
        series.counter(app: app, slot: index) {
            metrics.notificationCounter(app: app, service: .apns, environment: environment.rawValue, status: status,
                                        reason: RelayMetrics.reasonSlots[reasonSlot])
        }.increment()
    }

    public func recordAPNsLatency(environment: APNsEnvironment, nanoseconds: UInt64) {
        metrics.recordAPNsLatency(environment: environment, nanoseconds: nanoseconds)
    }

    /// Restricted endpoints' checks, per app and result; made
    /// on first use, a few per app.
    private var vapidSeries: [String: Counter] = [:]

    public func countVAPID(app: String, result: VAPIDResult) {
        let key = app + " " + result.rawValue
        if let counter = vapidSeries[key] { return counter.increment() }
        let counter = metrics.registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "toot_relay", metricName: "vapid_checks", unitName: "total",
                helpText: "Pushes to restricted endpoints (and refused unrestricted ones) by app and result"),
            labels: [("app", app), ("result", result.rawValue)])
        vapidSeries[key] = counter
        counter.increment()
    }
}

/// The `result` label of `toot_relay_vapid_checks_total` (external: the
/// values must not change).
public enum VAPIDResult: String, CaseIterable, Sendable {
    case accepted
    /// No VAPID authentication (401).
    case unauthenticated
    /// Malformed, another key, a bad signature (403).
    case forbidden
    /// Signed by the endpoint's key, but for another origin (503).
    case audience
    /// Signed by the endpoint's key, but `exp` passed or too far ahead (503).
    case expired
    case tooFarAhead = "too_far_ahead"
    /// An unrestricted endpoint of a `restricted-only` app (403).
    case unrestricted

    public init(_ verdict: VAPIDVerdict) {
        switch verdict {
        case .accepted: self = .accepted
        case .unauthenticated: self = .unauthenticated
        case .forbidden: self = .forbidden
        case .unverifiable(.audience, _): self = .audience
        case .unverifiable(.expired, _): self = .expired
        case .unverifiable(.tooFarAhead, _): self = .tooFarAhead
        }
    }
}

/// The relay's own `reason` label values, for outcomes that are not an
/// answer of the push service. The raw values are the labels Prometheus
/// shows (external: they must not change).
public enum LocalReason: String, CaseIterable, Sendable {
    case invalidRequest = "invalid_request"
    case timeout
    case connectFailed = "connect_failed"
    case tlsFailed = "tls_failed"
    case streamFailed = "stream_failed"
    case allConnectionsDown = "all_connections_down"
    case overloaded
    /// A Web Push body sent without its ciphertext: it did not fit APNs'
    /// payload once encoded (counted with the answer, 201 when APNs took it).
    case payloadDropped = "payload_dropped"
    /// A URL naming an app the relay does not have (one series whatever the
    /// id: ids come from the URL).
    case unknownApp = "unknown_app"
    /// An FCM URL of an app without FCM credentials, or of a relay without an
    /// FCM client (503: the relay's configuration).
    case noFCMCredentials = "no_fcm_credentials"
    /// FCM's token endpoint refused the service account, or answered what
    /// the relay cannot read (502): no access token to send with.
    case noAccessToken = "no_access_token"
    /// FCM's token endpoint unavailable (503).
    case tokenEndpointUnavailable = "token_endpoint_unavailable"

    /// The reason's index in `RelayMetrics.reasonSlots` (after "").
    var slot: Int {
        switch self {
        case .invalidRequest: 1
        case .timeout: 2
        case .connectFailed: 3
        case .tlsFailed: 4
        case .streamFailed: 5
        case .allConnectionsDown: 6
        case .overloaded: 7
        case .payloadDropped: 8
        case .unknownApp: 9
        case .noFCMCredentials: 10
        case .noAccessToken: 11
        case .tokenEndpointUnavailable: 12
        }
    }

    /// The relay's reason for an outcome; nil for an APNs answer (its own
    /// reason counts).
    public init?(_ outcome: DeliveryOutcome) {
        switch outcome {
        case .apns: return nil
        case .answerTimedOut: self = .timeout
        case .connectFailed: self = .connectFailed
        case .tlsFailed: self = .tlsFailed
        case .streamFailed: self = .streamFailed
        case .allConnectionsDown: self = .allConnectionsDown
        case .overloaded: self = .overloaded
        }
    }
}
