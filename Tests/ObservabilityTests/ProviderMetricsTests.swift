import APNsCore
import APNs
import FCMCore
@testable import Observability
import Testing

// The provider API's notification count: each outcome's
// `result` label, and the per-loop series cache that keeps the registry's
// lookup off the hot path.

/// (outcome, environment, the `result` label it is counted under).
let providerResultCases: [(DeliveryOutcome, APNsEnvironment, String)] = [
    (.apns(status: 200, reason: nil, apnsID: "A"), .production, "accepted"),
    (.apns(status: 410, reason: .unregistered, apnsID: nil), .development, "Unregistered"),
    (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), .production, "BadDeviceToken"),
    (.apns(status: 403, reason: .invalidProviderToken, apnsID: nil), .production, "InvalidProviderToken"),
    (.apns(status: 500, reason: nil, apnsID: nil), .production, "status-500"),
    (.apns(status: 400, reason: .unknown("SomethingNew"), apnsID: nil), .development, "other-400"),
    (.answerTimedOut, .production, "timeout"),
    (.connectFailed("refused"), .production, "unreachable"),
    (.tlsFailed("handshake"), .development, "unreachable"),
    (.streamFailed("reset"), .production, "unreachable"),
    (.allConnectionsDown, .production, "unreachable"),
    (.overloaded, .development, "overloaded"),
]

private func providerMetrics() -> (RelayMetrics, ProviderMetrics) {
    let relay = RelayMetricsTests.metrics()
    return (relay, ProviderMetrics(registry: relay.registry))
}

private func series(_ app: String, _ environment: APNsEnvironment, _ result: String) -> String {
    #"toot_relay_api_notifications_total{app="\#(app)",service="apns",environment="\#(environment.rawValue)",result="\#(result)"}"#
}

@Test("each outcome is counted under its result label and environment", arguments: providerResultCases)
func providerNotificationResult(_ outcome: DeliveryOutcome, _ environment: APNsEnvironment, _ result: String) {
    let (relay, metrics) = providerMetrics()
    let recorder = metrics.makeRecorder()
    recorder.countNotification(app: "toot", environment: environment, outcome: outcome)
    recorder.countNotification(app: "toot", environment: environment, outcome: outcome)
    let text = RelayMetricsTests.exposition(relay)
    #expect(text.contains(series("toot", environment, result) + " 2"))
    #expect(text.components(separatedBy: "toot_relay_api_notifications_total{").count - 1 == 1)
}

@Test("every loop's recorder adds to the same series, and a reload keeps counting into it")
func providerRecordersShareSeries() {
    let (relay, metrics) = providerMetrics()
    let (first, second) = (metrics.makeRecorder(), metrics.makeRecorder())
    let accepted = DeliveryOutcome.apns(status: 200, reason: nil, apnsID: nil)
    first.countNotification(app: "toot", environment: .production, outcome: accepted)
    second.countNotification(app: "toot", environment: .production, outcome: accepted)
    first.appsReplaced()
    first.countNotification(app: "toot", environment: .production, outcome: accepted)
    #expect(RelayMetricsTests.exposition(relay).contains(series("toot", .production, "accepted") + " 3"))
}

@Test("switching apps and back counts each under its own series")
func providerRecorderSwitchesApps() {
    let (relay, metrics) = providerMetrics()
    let recorder = metrics.makeRecorder()
    let accepted = DeliveryOutcome.apns(status: 200, reason: nil, apnsID: nil)
    for app in ["a", "b", "a", "a", "b"] {
        recorder.countNotification(app: app, environment: .production, outcome: accepted)
    }
    recorder.countNotification(app: "a", environment: .development, outcome: accepted)
    let text = RelayMetricsTests.exposition(relay)
    #expect(text.contains(series("a", .production, "accepted") + " 3"))
    #expect(text.contains(series("b", .production, "accepted") + " 2"))
    #expect(text.contains(series("a", .development, "accepted") + " 1"))
}

@Test("requests count by route and status, across loops and back and forth")
func providerRequestCounts() {
    let (relay, metrics) = providerMetrics()
    let (first, second) = (metrics.makeRecorder(), metrics.makeRecorder())
    for (route, status) in [("push", 200), ("device", 400), ("push", 200), ("device", 200), ("push", 401)] {
        first.countRequest(route: route, status: status)
    }
    second.countRequest(route: "push", status: 200)
    let text = RelayMetricsTests.exposition(relay)
    for (route, status, count) in [("push", 200, 3), ("device", 400, 1), ("device", 200, 1), ("push", 401, 1)] {
        #expect(text.contains(#"toot_relay_api_requests_total{route="\#(route)",status="\#(status)"} \#(count)"#))
    }
}

@Test("a reload empties a loop's cache, so apps it dropped are not kept")
func providerRecorderForgetsDroppedApps() {
    let (_, metrics) = providerMetrics()
    let recorder = metrics.makeRecorder()
    for app in ["a", "b", "c"] {
        recorder.countNotification(app: app, environment: .production, outcome: .answerTimedOut)
    }
    // A rare label is not cached: it cannot grow the cache either.
    recorder.countNotification(app: "d", environment: .production,
                               outcome: .apns(status: 500, reason: nil, apnsID: nil))
    #expect(recorder.cachedApps == 3)
    recorder.appsReplaced()
    #expect(recorder.cachedApps == 0)
    recorder.countNotification(app: "a", environment: .development, outcome: .overloaded)
    #expect(recorder.cachedApps == 1)
}

@Test("with a hook, its four results show at 0 from the first tick and count what each tick adds")
func hookSeriesFromTheFirstTick() {
    let (relay, metrics) = providerMetrics()
    metrics.publish(feedback: [:])
    #expect(!RelayMetricsTests.exposition(relay).contains("toot_relay_feedback_hook_posts_total"))
    metrics.publishHookPosts(delivered: 0, retried: 0, failed: 0, dropped: 0)
    let fresh = RelayMetricsTests.exposition(relay)
    for result in ["delivered", "retried", "failed", "dropped"] {
        #expect(fresh.contains(#"toot_relay_feedback_hook_posts_total{result="\#(result)"} 0"#))
    }
    metrics.publishHookPosts(delivered: 3, retried: 0, failed: 0, dropped: 89)
    metrics.publishHookPosts(delivered: 5, retried: 0, failed: 1, dropped: 89)
    let text = RelayMetricsTests.exposition(relay)
    #expect(text.contains(#"toot_relay_feedback_hook_posts_total{result="delivered"} 5"#))
    #expect(text.contains(#"toot_relay_feedback_hook_posts_total{result="retried"} 0"#))
    #expect(text.contains(#"toot_relay_feedback_hook_posts_total{result="failed"} 1"#))
    #expect(text.contains(#"toot_relay_feedback_hook_posts_total{result="dropped"} 89"#))
}

@Test("the feedback list's counts show per app once they happen, adding what each tick adds")
func feedbackCountsPerApp() {
    let (relay, metrics) = providerMetrics()
    metrics.publish(feedback: ["toot": (recorded: 0, dropped: 0)])
    #expect(!RelayMetricsTests.exposition(relay).contains("toot_relay_feedback_recorded_total"))
    metrics.publish(feedback: ["toot": (recorded: 4, dropped: 0)])
    metrics.publish(feedback: ["toot": (recorded: 6, dropped: 2)])
    let text = RelayMetricsTests.exposition(relay)
    #expect(text.contains(#"toot_relay_feedback_recorded_total{app="toot"} 6"#))
    #expect(text.contains(#"toot_relay_feedback_dropped_total{app="toot"} 2"#))
}

/// (an FCM send's end, the `result` label it is counted under).
let providerFCMResultCases: [(FCMOutcome, String)] = [
    (.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false), "accepted"),
    (.answered(.failed(FCMError(httpStatus: 404, reason: .unregistered)), retryAfterSeconds: nil, afterTokenRefresh: false),
     "UNREGISTERED"),
    (.answered(.failed(FCMError(httpStatus: 401, reason: .thirdPartyAuthError)), retryAfterSeconds: nil,
               afterTokenRefresh: true), "THIRD_PARTY_AUTH_ERROR"),
    (.answered(.failed(FCMError(httpStatus: 418, reason: .other("HTTP 418"))), retryAfterSeconds: nil,
               afterTokenRefresh: false), "other-418"),
    (.noAccessToken(.credentialsRejected(detail: "invalid_grant")), "no_access_token"),
    (.noAccessToken(.retryLater(seconds: 60, detail: "503")), "token_endpoint_unavailable"),
    (.answerTimedOut, "timeout"),
    (.connectFailed("refused"), "unreachable"),
    (.allConnectionsDown, "unreachable"),
    (.overloaded, "overloaded"),
]

@Test("each FCM send's end is counted under service fcm, no environment, and its result", arguments: providerFCMResultCases)
func providerFCMNotificationResult(_ outcome: FCMOutcome, _ result: String) {
    let (relay, metrics) = providerMetrics()
    let recorder = metrics.makeRecorder()
    recorder.countNotification(app: "droid", fcm: outcome)
    recorder.countNotification(app: "droid", fcm: outcome)
    recorder.countNotification(app: "droid", environment: .production, outcome: .overloaded)
    let text = RelayMetricsTests.exposition(relay)
    #expect(text.contains(#"toot_relay_api_notifications_total{app="droid",service="fcm",environment="",result="\#(result)"} 2"#))
    #expect(text.contains(series("droid", .production, "overloaded") + " 1"))
    #expect(text.components(separatedBy: "toot_relay_api_notifications_total{").count - 1 == 2)
}

@Test("a reload empties a loop's FCM series too")
func providerRecorderForgetsFCMSeries() {
    let (_, metrics) = providerMetrics()
    let recorder = metrics.makeRecorder()
    recorder.countNotification(app: "droid", fcm: .answerTimedOut)
    recorder.countNotification(app: "toot", environment: .production, outcome: .answerTimedOut)
    #expect(recorder.cachedApps == 2)
    recorder.appsReplaced()
    #expect(recorder.cachedApps == 0)
}
