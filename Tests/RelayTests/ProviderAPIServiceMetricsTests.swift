import AsyncPush
import FCMCore
import HTTP1
import HTTPCore
import Observability
import ProviderAPI
import RelayCore
import Testing
import TestSupport

@testable import Relay

// `/api/push`'s counts and log line name the push service each token went
// through: `toot_relay_api_notifications_total{service="apns"|"fcm"}`, and
// `service=` in the request's line.

@Suite("Provider API: the push service in metrics and logs")
struct ProviderAPIServiceMetricsTests {
    static let iosToken = String(repeating: "ab", count: 32)
    static let mixedRequest = #"{"notifications":[{"tokens":["\#(iosToken)"],"platform":1,"message":"i"},"#
        + #"{"tokens":["\#(testFCMToken)","\#(otherFCMToken)"],"platform":2,"message":"a"}]}"#

    static func series(service: String, environment: String, result: String) -> String {
        #"toot_relay_api_notifications_total{app="default",service="\#(service)",environment="\#(environment)",result="\#(result)"}"#
    }

    static func fixture(async: Bool) throws -> (ProviderFCMFixture, RelayMetrics) {
        let relay = RelayMetrics(connections: HTTP1ListenerCounters(maxConnections: 10), maxInFlight: 10, inFlight: { 0 })
        let fixture = try ProviderFCMFixture(
            async: AsyncPushes(byDefault: async, maxTries: 1, maxPending: 100),
            metrics: ProviderMetrics(registry: relay.registry),
            outcome: { $0.token.text == otherFCMToken ? ProviderAPIFCMTests.failed(404, .unregistered)
                                                      : .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false) })
        return (fixture, relay)
    }

    @Test("iOS and Android tokens of one request count under their service; the line names both", arguments: [false, true])
    func mixedRequest(async: Bool) throws {
        let (fixture, relay) = try Self.fixture(async: async)
        let request = HTTP1Request(method: "POST", target: "/api/push", version: .http1_1, headers: [:],
                                   body: Array(Self.mixedRequest.utf8), keepAlive: true)
        _ = fixture.handler.handle(request) { _ in }
        fixture.apnsSender.completeAll()
        fixture.fcmSender.completeAll()
        let text = String(decoding: relay.exposition(), as: UTF8.self)
        #expect(text.contains(Self.series(service: "apns", environment: "production", result: "accepted") + " 1"))
        #expect(text.contains(Self.series(service: "fcm", environment: "", result: "accepted") + " 1"))
        #expect(text.contains(Self.series(service: "fcm", environment: "", result: "UNREGISTERED") + " 1"))
        #expect(text.components(separatedBy: "toot_relay_api_notifications_total{").count - 1 == 3)
        fixture.handler.flushLog()
        #expect(fixture.log.lines.contains { $0.contains("notifications=2 tokens=3 service=apns,fcm ") })
    }

    @Test("the request line names the services its tokens went to", arguments: [
        (true, false, " service=apns"), (false, true, " service=fcm"), (true, true, " service=apns,fcm"),
        (false, false, ""),
    ])
    func serviceWord(apns: Bool, fcm: Bool, word: String) {
        #expect(ProviderAPIHandler.serviceWord(apns: apns, fcm: fcm) == word)
    }
}
