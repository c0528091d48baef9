import Delivery
import APNs
import FCMCore
import APNsCore
import HTTP1
import Locking
@testable import Observability
import RelayCore
import Testing
import TestSupport

@Suite("Relay metrics")
struct RelayMetricsTests {
    static func exposition(_ metrics: RelayMetrics) -> String {
        String(decoding: metrics.exposition(), as: UTF8.self)
    }

    /// Metrics of a Web Push listener with nothing in flight (of at most
    /// `maxInFlight`) unless `inFlight` says otherwise.
    static func metrics(connections: HTTP1ListenerCounters = HTTP1ListenerCounters(maxConnections: 10),
                        maxInFlight: Int = 10, inFlight: @escaping @Sendable () -> Int = { 0 }) -> RelayMetrics {
        RelayMetrics(connections: connections, maxInFlight: maxInFlight, inFlight: inFlight)
    }

    @Test("APNs outcomes count under service, environment, status and reason; delivered shows 0 from the start")
    func notifications() {
        let metrics = Self.metrics()
        metrics.setApps(RelayApps(defaultApp: RelayApp(topic: "com.example.app")))
        let start = Self.exposition(metrics)
        #expect(start.contains(#"toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""} 0"#))
        let recorder = metrics.makeRecorder()
        recorder.count(app: "default", environment: .production, status: 201)
        recorder.count(app: "default", environment: .production, status: 201)
        recorder.count(app: "default", environment: .development, status: 410, apnsReason: .unregistered)
        recorder.count(app: "default", environment: .production, status: 504, localReason: .timeout)
        recorder.count(app: "default", environment: .production, status: 502, apnsReason: .unknown("SomethingNew"))
        recorder.count(app: "default", environment: .development, status: 400, localReason: .invalidRequest)
        let text = Self.exposition(metrics)
        #expect(text.contains(#"toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""} 2"#))
        #expect(text.contains(#"toot_relay_notifications_total{app="default",service="apns",environment="development",status="410",reason="Unregistered"} 1"#))
        #expect(text.contains(#"toot_relay_notifications_total{app="default",service="apns",environment="production",status="504",reason="timeout"} 1"#))
        #expect(text.contains(#"toot_relay_notifications_total{app="default",service="apns",environment="production",status="502",reason="SomethingNew"} 1"#))
        #expect(text.contains(#"toot_relay_notifications_total{app="default",service="apns",environment="development",status="400",reason="invalid_request"} 1"#))
        // Only what happened (and the delivered rows) is listed.
        #expect(text.components(separatedBy: "toot_relay_notifications_total{").count - 1 == 6)
        // Another app counts under its own label.
        recorder.count(app: "feditext", environment: .production, status: 201)
        #expect(Self.exposition(metrics).contains(
            #"toot_relay_notifications_total{app="feditext",service="apns",environment="production",status="201",reason=""} 1"#))
    }

    @Test("FCM outcomes count in the same series, service fcm, no environment; delivered shows 0 from the start")
    func fcmNotifications() {
        let metrics = Self.metrics()
        var droid = RelayApp(id: "droid", topic: "", production: nil, development: nil)
        droid.fcm = FCMAppCredentials(account: FCMTestAccount.make(project: "droid"), health: AppHealth())
        metrics.setApps(RelayApps([RelayApp(topic: "com.example.app"), droid], defaultAppID: "default"))
        let fcmSeries = #"toot_relay_notifications_total{app="droid",service="fcm",environment="""#
        let start = Self.exposition(metrics)
        #expect(start.contains(fcmSeries + #",status="201",reason=""} 0"#))
        // An app without FCM credentials has no FCM series, one without APNs credentials no APNs one.
        #expect(!start.contains(#"app="default",service="fcm""#))
        #expect(!start.contains(#"app="droid",service="apns""#))
        let recorder = metrics.makeRecorder()
        recorder.countFCM(app: "droid", status: 201)
        recorder.countFCM(app: "droid", status: 201, localReason: .payloadDropped)
        recorder.countFCM(app: "droid", status: 410, fcmReason: .unregistered)
        recorder.countFCM(app: "droid", status: 410, fcmReason: .unregistered)
        recorder.countFCM(app: "droid", status: 502, fcmReason: .other("SOMETHING_NEW"))
        recorder.countFCM(app: "droid", status: 503, localReason: .noFCMCredentials)
        recorder.countFCM(app: "droid", status: 418, fcmReason: .internalError)
        let text = Self.exposition(metrics)
        for (labels, count) in [(#",status="201",reason=""}"#, 1), (#",status="201",reason="payload_dropped"}"#, 1),
                                (#",status="410",reason="UNREGISTERED"}"#, 2), (#",status="502",reason="SOMETHING_NEW"}"#, 1),
                                (#",status="503",reason="no_fcm_credentials"}"#, 1), (#",status="418",reason="INTERNAL"}"#, 1)] {
            #expect(text.contains(fcmSeries + labels + " \(count)"), "\(labels)")
        }
        // The APNs series of the same app id stay apart.
        recorder.count(app: "droid", environment: .production, status: 201)
        #expect(Self.exposition(metrics).contains(
            #"toot_relay_notifications_total{app="droid",service="apns",environment="production",status="201",reason=""} 1"#))
        #expect(!text.contains("fcm_notifications_total"))
    }

    @Test("an FCM send's end counts under FCM's code, or the relay's own reason", arguments: [
        (FCMOutcome.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false), 201, false, ""),
        (.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false), 201, true, "payload_dropped"),
        (.answered(.failed(FCMError(httpStatus: 403, reason: .senderIDMismatch)), retryAfterSeconds: nil,
                   afterTokenRefresh: false), 410, false, "SENDER_ID_MISMATCH"),
        (.answered(.failed(FCMError(httpStatus: 429, reason: .quotaExceeded)), retryAfterSeconds: 60,
                   afterTokenRefresh: false), 503, false, "QUOTA_EXCEEDED"),
        (.noAccessToken(.credentialsRejected(detail: "invalid_grant")), 502, false, "no_access_token"),
        (.noAccessToken(.retryLater(seconds: 60, detail: "503")), 503, false, "token_endpoint_unavailable"),
        (.answerTimedOut, 504, false, "timeout"),
        (.connectFailed("refused"), 502, false, "connect_failed"),
        (.tlsFailed("handshake"), 502, false, "tls_failed"),
        (.streamFailed("reset"), 502, false, "stream_failed"),
        (.allConnectionsDown, 503, false, "all_connections_down"),
        (.overloaded, 503, false, "overloaded"),
    ])
    func fcmDeliveryReasons(_ outcome: FCMOutcome, _ status: Int, _ dropped: Bool, _ reason: String) {
        let metrics = Self.metrics()
        metrics.makeRecorder().countFCM(app: "droid", status: status, delivery: FCMDelivery(outcome: outcome),
                                        ciphertextDropped: dropped)
        #expect(Self.exposition(metrics).contains(
            #"toot_relay_notifications_total{app="droid",service="fcm",environment="",status="\#(status)",reason="\#(reason)"} 1"#))
    }

    @Test("latency histogram, gauges from the shared counters, APNs connections and the expiry")
    func gauges() {
        let connections = HTTP1ListenerCounters(maxConnections: 10)
        let inFlight = Locked(0)
        let metrics = Self.metrics(connections: connections, inFlight: { inFlight.withLock { $0 } })
        let recorder = metrics.makeRecorder()
        recorder.recordAPNsLatency(environment: .production, nanoseconds: 30_000_000)
        _ = connections.openConnection()
        _ = connections.openConnection()
        inFlight.withLock { $0 += 1 }
        let apps = RelayApps([RelayApp(topic: "com.example.app"), RelayApp(id: "beta", topic: "com.example.beta")],
                             defaultAppID: "default")
        metrics.setApps(apps)
        apps.all[0].health.record(.rejected)
        metrics.setAPNsConnections([.ready: 3, .connecting: 1])
        metrics.setAPNsQueued(5)
        metrics.setCredentialExpiry(app: "default", environment: .production, unixSeconds: 1_800_000_000)
        let text = Self.exposition(metrics)
        #expect(text.contains(#"toot_relay_apns_latency_seconds_bucket{environment="production",le="0.05"} 1"#))
        #expect(text.contains(#"toot_relay_apns_latency_seconds_bucket{environment="production",le="0.025"} 0"#))
        #expect(text.contains("toot_relay_sender_connections 2"))
        #expect(text.contains("toot_relay_requests_in_flight 1"))
        #expect(text.contains(#"toot_relay_apns_credentials_rejected{app="default"} 1"#))
        #expect(text.contains(#"toot_relay_apns_credentials_rejected{app="beta"} 0"#))
        #expect(text.contains(#"toot_relay_apns_connections{state="ready"} 3"#))
        #expect(text.contains(#"toot_relay_apns_connections{state="closed"} 0"#))
        #expect(text.contains("toot_relay_apns_queued 5"))
        #expect(text.contains("toot_relay_max_in_flight 10"))
        #expect(text.contains(#"toot_relay_credential_expiry_timestamp_seconds{app="default",environment="production"} 1800000000"#))
    }

    @Test("a reload that drops an app, or an app's environment, takes its expiry and rejection gauges out of the exposition")
    func reloadDropsGaugesOfAppsNoLongerServed() {
        let metrics = Self.metrics()
        let beta = RelayApp(id: "beta", topic: "com.example.beta", production: CredentialID(2),
                            development: CredentialID(3))
        metrics.setApps(RelayApps([RelayApp(topic: "com.example.app"), beta], defaultAppID: "default"))
        for environment in [APNsEnvironment.production, .development] {
            metrics.setCredentialExpiry(app: "default", environment: environment, unixSeconds: 1_800_000_000)
            metrics.setCredentialExpiry(app: "beta", environment: environment, unixSeconds: 1_700_000_000)
        }
        beta.health.record(.rejected)
        let before = Self.exposition(metrics)
        #expect(before.contains(#"toot_relay_credential_expiry_timestamp_seconds{app="beta",environment="development"} 1700000000"#))
        #expect(before.contains(#"toot_relay_apns_credentials_rejected{app="beta"} 1"#))

        // beta is gone; the default app keeps production only.
        let defaultOnly = RelayApp(topic: "com.example.app", production: .primary, development: nil)
        metrics.setApps(RelayApps([defaultOnly], defaultAppID: "default"))
        let after = Self.exposition(metrics)
        #expect(!after.contains(#"toot_relay_credential_expiry_timestamp_seconds{app="beta""#))
        #expect(!after.contains(#"toot_relay_apns_credentials_rejected{app="beta"}"#))
        #expect(!after.contains(#"toot_relay_credential_expiry_timestamp_seconds{app="default",environment="development"}"#))
        // Its counters stay: a counter's history is not a state that alerts.
        #expect(after.contains(#"toot_relay_notifications_total{app="beta",service="apns",environment="production",status="201",reason=""} 0"#))
        #expect(after.contains(#"toot_relay_credential_expiry_timestamp_seconds{app="default",environment="production"} 1800000000"#))
        #expect(after.contains(#"toot_relay_apns_credentials_rejected{app="default"} 0"#))

        // Back again: its gauges return with what the reload publishes.
        metrics.setApps(RelayApps([RelayApp(topic: "com.example.app"), beta], defaultAppID: "default"))
        metrics.setCredentialExpiry(app: "beta", environment: .production, unixSeconds: 1_700_000_001)
        let again = Self.exposition(metrics)
        #expect(again.contains(#"toot_relay_credential_expiry_timestamp_seconds{app="beta",environment="production"} 1700000001"#))
        #expect(again.contains(#"toot_relay_apns_credentials_rejected{app="beta"} 1"#))
    }

    @Test("the APNs event counters show from the start at 0 and add what the clients' sums counted since the last tick")
    func apnsEventCounters() {
        let metrics = Self.metrics()
        let fresh = Self.exposition(metrics)
        for event in ["attempted", "connect_failed", "lost", "goaway"] {
            #expect(fresh.contains("toot_relay_apns_connection_events_total{event=\"\(event)\"} 0"), "\(event)")
        }
        #expect(fresh.contains("toot_relay_apns_resends_total 0"))
        var counters = APNsCounters()
        counters.connectionsOpened = 4
        counters.connectFailures = 2
        counters.resent = 1
        metrics.setAPNsCounters(counters)
        counters.connectionsOpened = 6
        counters.connectionsLost = 1
        counters.goAwaysReceived = 3
        metrics.setAPNsCounters(counters)
        metrics.setAPNsCounters(counters)
        let text = Self.exposition(metrics)
        #expect(text.contains(#"toot_relay_apns_connection_events_total{event="attempted"} 6"#))
        #expect(text.contains(#"toot_relay_apns_connection_events_total{event="connect_failed"} 2"#))
        #expect(text.contains(#"toot_relay_apns_connection_events_total{event="lost"} 1"#))
        #expect(text.contains(#"toot_relay_apns_connection_events_total{event="goaway"} 3"#))
        #expect(text.contains("toot_relay_apns_resends_total 1"))
    }

    @Test("the cap and the waiting notifications show from the start, at 0 while nothing waits")
    func capAndQueueFromTheStart() {
        let metrics = Self.metrics(maxInFlight: 250)
        let text = Self.exposition(metrics)
        #expect(text.contains("toot_relay_max_in_flight 250"))
        #expect(text.contains("toot_relay_apns_queued 0"))
        #expect(text.contains("toot_relay_requests_in_flight 0"))
    }

    @Test("the provider API's notifications in flight show once its listener is set, read when scraped")
    func apiInFlight() {
        let metrics = Self.metrics()
        #expect(!Self.exposition(metrics).contains("toot_relay_api_notifications_in_flight"))
        let api = Locked(0)
        metrics.setAPIInFlight { api.withLock { $0 } }
        #expect(Self.exposition(metrics).contains("toot_relay_api_notifications_in_flight 0"))
        api.withLock { $0 += 2 }
        let text = Self.exposition(metrics)
        #expect(text.contains("toot_relay_api_notifications_in_flight 2"))
        // The Web Push listener's count is its own.
        #expect(text.contains("toot_relay_requests_in_flight 0"))
    }

    @Test("each local reason's slot holds its own label value")
    func localReasonSlots() {
        for reason in LocalReason.allCases {
            #expect(RelayMetrics.reasonSlots[reason.slot] == reason.rawValue)
            #expect(RelayMetrics.fcmReasonSlots[reason.slot] == reason.rawValue)
        }
        #expect(LocalReason.allCases.map(\.rawValue) == [
            "invalid_request", "timeout", "connect_failed", "tls_failed", "stream_failed", "all_connections_down",
            "overloaded", "payload_dropped", "unknown_app", "no_fcm_credentials", "no_access_token",
            "token_endpoint_unavailable",
        ])
    }
}
