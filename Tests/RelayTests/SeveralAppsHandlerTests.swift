import APNsCore
import Delivery
import EventLoop
import HTTP1
import HTTPCore
import Observability
import RelayCore
import TestSupport
import Testing

@testable import Relay

/// Three apps behind one handler: which credential and topic a
/// push goes out with, what a URL leads nowhere gets, and each app's health.
private struct AppsFixture {
    static let beta = CredentialID(2)
    static let feditextProduction = CredentialID(3)
    static let feditextSandbox = CredentialID(4)

    static let apps = RelayApps([
        RelayApp(topic: "com.example.app"),
        RelayApp(id: "beta", topic: "com.example.beta", alert: .text("beta"), production: nil,
                 development: AppsFixture.beta),
        RelayApp(id: "feditext", topic: "com.example.feditext", production: AppsFixture.feditextProduction,
                 development: AppsFixture.feditextSandbox),
    ], defaultAppID: RelayApp.defaultID, retired: [RetiredApp(id: "old", topic: "com.example.old")])

    /// APNs answers 403 for the topics in `rejecting`, else 200.
    static func fixture(rejecting: Set<String> = [], metrics: RelayMetrics? = nil) throws -> WebPushHandlerFixture {
        try WebPushHandlerFixture(apps: apps, metrics: metrics) { notification in
            let topic = notification.headers.first { $0.name == "apns-topic" }?.value ?? ""
            return rejecting.contains(topic)
                ? .apns(status: 403, reason: .badCertificate, apnsID: nil)
                : .apns(status: 200, reason: nil, apnsID: notification.apnsID)
        }
    }
}

@Suite("Several apps in the handler")
struct SeveralAppsHandlerTests {
    @Test("each URL's push goes out with its app's topic and its credential for the environment", arguments: [
        ("/relay-to/production/" + testToken, "com.example.app", CredentialID.primary),
        ("/relay-to/default/development/" + testToken, "com.example.app", .primary),
        ("/relay-to/beta/development/" + testToken, "com.example.beta", AppsFixture.beta),
        ("/relay-to/feditext/production/" + testToken, "com.example.feditext", AppsFixture.feditextProduction),
        ("/push/feditext/\(testToken)/7?sandbox=true", "com.example.feditext", AppsFixture.feditextSandbox),
        ("/push/com.example.beta/\(testToken)/7?sandbox=true", "com.example.beta", AppsFixture.beta),
    ])
    func sendsWithTheAppsCredential(path: String, topic: String, credential: CredentialID) throws {
        let fixture = try AppsFixture.fixture()
        #expect(fixture.answer(webPushRequest(path: path))?.status == 201)
        let sent = try #require(fixture.sender.sent.first)
        #expect(sent.headers.contains(HTTPField(name: "apns-topic", value: topic)))
        #expect(sent.credential == credential)
    }

    @Test("an app's own alert replaces the dialect's default")
    func appAlert() throws {
        let fixture = try AppsFixture.fixture()
        #expect(fixture.answer(webPushRequest(path: "/relay-to/beta/development/" + testToken))?.status == 201)
        let payload = String(decoding: try #require(fixture.sender.sent.first).payload, as: UTF8.self)
        #expect(payload.hasPrefix(#"{"aps":{"alert":"beta","#))
    }

    @Test("a URL naming an environment its app does not serve is 404 before APNs: the operator's word", arguments: [
        "/relay-to/beta/production/" + testToken,
        "/push/beta/\(testToken)/7",
    ])
    func excludedEnvironmentIs404(path: String) throws {
        let fixture = try AppsFixture.fixture()
        #expect(fixture.answer(webPushRequest(path: path))?.status == 404)
        #expect(fixture.sender.sent.isEmpty)
        #expect(fixture.logLines.last?.contains("status=404") == true)
    }

    @Test("a URL naming an app the relay does not have is 503 with Retry-After: the relay's mistake", arguments: [
        "/relay-to/nosuch/production/" + testToken,
        "/push/com.example.nosuch/\(testToken)/7",
        // A topic is an app's name in /push/ only.
        "/relay-to/com.example.beta/development/" + testToken,
        "/relay-to/com.example.old/production/" + testToken,
    ])
    func unknownAppIs503(path: String) throws {
        let fixture = try AppsFixture.fixture()
        let response = fixture.answer(webPushRequest(path: path))
        #expect(response?.status == 503)
        #expect(response?.headers.first { $0.name == "Retry-After" }?.value == "300")
        #expect(fixture.sender.sent.isEmpty)
        #expect(fixture.logLines.contains { $0.contains("status=503") && $0.contains("reason=\"no such app\"") })
        #expect(fixture.logLines.contains { $0.contains("which the relay does not have") })
    }

    @Test("a URL naming an app the operator retired is 410, so senders drop the subscription", arguments: [
        "/relay-to/old/production/" + testToken,
        "/relay-to/old/development/" + testToken,
        "/push/old/\(testToken)/7",
        "/push/com.example.old/\(testToken)/7?sandbox=true",
    ])
    func retiredAppIs410(path: String) throws {
        let fixture = try AppsFixture.fixture()
        #expect(fixture.answer(webPushRequest(path: path))?.status == 410)
        #expect(fixture.sender.sent.isEmpty)
        #expect(fixture.logLines.last?.contains("status=410") == true)
    }

    @Test("without a default app the URLs without an app part are 503, and the apps' own URLs still deliver")
    func noDefaultApp() throws {
        let fixture = try AppsFixture.fixture()
        fixture.handler.replaceApps(RelayApps(fixture.apps.all.filter { $0.id != "default" }, defaultAppID: nil))
        #expect(fixture.answer(webPushRequest(path: "/relay-to/production/" + testToken))?.status == 503)
        #expect(fixture.answer(webPushRequest(path: "/push/\(testToken)/7"))?.status == 503)
        #expect(fixture.answer(webPushRequest(path: "/relay-to/feditext/production/" + testToken))?.status == 201)
    }

    @Test("pushes for unknown apps warn once a minute per loop, naming the id, and count in one series")
    func unknownAppsWarnOnceAndCount() throws {
        let metrics = RelayMetrics(connections: HTTP1ListenerCounters(maxConnections: 10), maxInFlight: 10, inFlight: { 0 })
        let fixture = try AppsFixture.fixture(metrics: metrics)
        for id in ["nosuch", "other", "nosuch"] {
            #expect(fixture.answer(webPushRequest(path: "/relay-to/\(id)/production/" + testToken))?.status == 503)
        }
        let warnings = fixture.logLines.filter { $0.contains("which the relay does not have") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains(#"app "nosuch""#) == true)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"toot_relay_notifications_total{app="-",service="apns",environment="production",status="503",reason="unknown_app"} 3"#))
        #expect(!text.contains(#"app="nosuch""#) && !text.contains(#"app="other""#))
    }

    @Test("one app's rejected credentials fail its own health, and the relay's only when every app's are")
    func healthPerApp() throws {
        let fixture = try AppsFixture.fixture(rejecting: ["com.example.beta"])
        #expect(fixture.answer(webPushRequest(path: "/relay-to/beta/development/" + testToken))?.status == 502)
        #expect(fixture.health("/relay-to/_health/beta") == 503)
        #expect(fixture.health("/relay-to/_health/feditext") == 200)
        #expect(fixture.health("/relay-to/_health") == 200)
        #expect(fixture.health("/relay-to/_health/nosuch") == 404)
        for app in fixture.apps.all { app.health.record(.rejected) }
        #expect(fixture.health("/relay-to/_health") == 503)
    }
}

@Suite("A token key APNs rejects")
struct RejectedKeyTests {
    @Test("a key scoped to the other environment is 502, the app's health, and an error line naming app, environment and key id",
          arguments: [APNsReason.badEnvironmentKeyInToken, .badEnvironmentKeyIdInToken])
    func rejectedKeyIsNamed(_ reason: APNsReason) throws {
        var app = RelayApp(id: "feditext", topic: "com.example.feditext")
        app.keyIDs = [.production: "PROD456789", .development: "SANDBOX789"]
        let log = CapturedLog()
        let sender = FakeSender(outcome: { _ in .apns(status: 403, reason: reason, apnsID: nil) })
        let handler = WebPushHandler(sender: sender, apps: RelayApps([app], defaultAppID: nil),
                                   counters: InFlightDeliveries(maxInFlight: 10), logger: log.logger,
                                   loop: try EventLoop())
        var answer: HTTP1Response?
        #expect(handler.handle(webPushRequest(path: "/relay-to/feditext/development/" + testToken),
                               completion: { answer = $0 }) == nil)
        sender.completeAll()
        #expect(answer?.status == 502)
        #expect(app.health.credentialsRejected)
        handler.flushLog()
        let line = try #require(log.lines.last)
        #expect(line.contains("[error]") || line.lowercased().contains("error"))
        #expect(line.contains("app=feditext service=apns env=development") && line.contains("key-id=SANDBOX789"))
        #expect(!line.contains("PROD456789"))
    }
}
