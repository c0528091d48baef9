import APNsCore
import Delivery
import EventLoop
import FCMCore
import Feedback
import HTTP1
import HTTPCore
import Observability
import RelayCore
import TestSupport
import Testing

@testable import Relay

let testFCMToken = "cXyz_-1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

/// A Web Push handler over a fake APNs and a fake FCM: the apps, FCM's
/// answer and whether the loop has an FCM client vary.
struct FCMHandlerFixture {
    let apnsSender = FakeSender()
    let fcmSender: FakeFCMSender
    let store = FeedbackStore(maxPerApp: 100)
    let log = CapturedLog()
    let handler: WebPushHandler
    let loop: EventLoop
    let fcmHealth = AppHealth()

    /// The default app and app `droid` have FCM credentials; app `ios` has none.
    static func apps(fcmHealth: AppHealth, restrictedOnly: Bool = false) -> RelayApps {
        var main = RelayApp(topic: "com.example.app", restrictedOnly: restrictedOnly)
        main.fcm = FCMAppCredentials(account: FCMTestAccount.make(), health: fcmHealth)
        var droid = RelayApp(id: "droid", topic: "", production: nil, development: nil)
        droid.fcm = FCMAppCredentials(account: FCMTestAccount.make(project: "droid"), health: AppHealth())
        let ios = RelayApp(id: "ios", topic: "com.example.ios")
        return RelayApps([main, droid, ios], defaultAppID: RelayApp.defaultID, retired: [RetiredApp(id: "old")])
    }

    init(withFCMClient: Bool = true, restrictedOnly: Bool = false, metrics: RelayMetrics? = nil,
         outcome: @escaping (FCMNotification) -> FCMOutcome = { _ in
             .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
         }) throws {
        loop = try EventLoop()
        fcmSender = FakeFCMSender(outcome: outcome)
        let context = LoopContext(sender: apnsSender, fcmSender: withFCMClient ? fcmSender : nil,
                                  apps: Self.apps(fcmHealth: fcmHealth, restrictedOnly: restrictedOnly),
                                  logger: log.logger, loop: loop, metrics: metrics)
        handler = WebPushHandler(loopContext: context, counters: InFlightDeliveries(maxInFlight: 10),
                                 feedback: FeedbackSink(store: store, hook: nil), unixTime: { 1_000_000 })
    }

    var logLines: [String] {
        handler.flushLog()
        return log.lines
    }

    func answer(_ request: HTTP1Request) -> HTTP1Response? {
        var delivered: HTTP1Response?
        if let immediate = handler.handle(request, completion: { delivered = $0 }) { return immediate }
        #expect(delivered == nil, "completion must not run inside handle")
        fcmSender.completeAll()
        return delivered
    }
}

private func fcmHeader(_ response: HTTP1Response?, _ name: String) -> String? {
    response?.headers.first { $0.name.lowercased() == name.lowercased() }?.value
}

@Suite("Web Push through FCM")
struct FCMWebPushHandlerTests {
    static func failed(_ status: Int, _ reason: FCMReason, namesToken: Bool = false, retryAfter: Int? = nil,
                       afterRefresh: Bool = false) -> FCMOutcome {
        .answered(.failed(FCMError(httpStatus: status, reason: reason, namesToken: namesToken)),
                  retryAfterSeconds: retryAfter, afterTokenRefresh: afterRefresh)
    }

    /// WIRE.md §3.3's answer table, row by row: FCM's answer → the status the
    /// sender gets, its Retry-After, and whether the token is feedback.
    static let table: [(String, FCMOutcome, Int, String?, String?)] = [
        ("200", .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false), 201, nil, nil),
        ("404 UNREGISTERED", failed(404, .unregistered), 410, nil, "UNREGISTERED"),
        ("403 SENDER_ID_MISMATCH", failed(403, .senderIDMismatch), 410, nil, "SENDER_ID_MISMATCH"),
        ("400 INVALID_ARGUMENT naming message.token", failed(400, .invalidArgument, namesToken: true), 410, nil,
         "INVALID_ARGUMENT"),
        ("400 INVALID_ARGUMENT about anything else", failed(400, .invalidArgument), 502, nil, nil),
        ("429 QUOTA_EXCEEDED with Retry-After", failed(429, .quotaExceeded, retryAfter: 120), 503, "120", nil),
        ("429 QUOTA_EXCEEDED without", failed(429, .quotaExceeded), 503, "60", nil),
        ("500 INTERNAL", failed(500, .internalError), 503, "10", nil),
        ("503 UNAVAILABLE", failed(503, .unavailable, retryAfter: 7), 503, "7", nil),
        ("401 THIRD_PARTY_AUTH_ERROR", failed(401, .thirdPartyAuthError), 502, nil, nil),
        ("401 after a token refresh", failed(401, .unauthenticated, afterRefresh: true), 502, nil, nil),
        ("403 after a token refresh", failed(403, .permissionDenied, afterRefresh: true), 502, nil, nil),
        ("no answer within FCM_TIMEOUT", .answerTimedOut, 504, nil, nil),
        ("token endpoint refuses the account", .noAccessToken(.credentialsRejected(detail: "invalid_grant")), 502, nil, nil),
        ("no connection up", .allConnectionsDown, 503, "5", nil),
    ]

    @Test("each FCM answer gives the sender the table's status", arguments: table)
    func answerTable(_ row: (String, FCMOutcome, Int, String?, String?)) throws {
        let fixture = try FCMHandlerFixture(outcome: { _ in row.1 })
        let response = fixture.answer(webPushRequest(path: "/relay-to/fcm/\(testFCMToken)"))
        #expect(response?.status == row.2, "\(row.0)")
        #expect(fcmHeader(response, "Retry-After") == row.3, "\(row.0)")
        let entries = fixture.store.take(app: RelayApp.defaultID)
        #expect(entries.map(\.reason) == (row.4.map { [$0] } ?? []), "\(row.0)")
        if let entry = entries.first {
            #expect(entry.platform == .android)
            #expect(entry.token == testFCMToken)
        }
        if row.2 == 201 {
            #expect(fcmHeader(response, "Location")?.hasPrefix("/relay-to/message/") == true)
            #expect(fcmHeader(response, "TTL") == "172800")
        }
        let credentialsRejected = row.0.contains("401") || row.0.contains("403 after") || row.0.contains("refuses the account")
        #expect(fixture.fcmHealth.credentialsRejected == credentialsRejected, "\(row.0)")
        #expect(fixture.apnsSender.sent.isEmpty)
        let line = fixture.logLines.last ?? ""
        #expect(line.contains("service=fcm"), "\(line)")
        #expect(!line.contains(FCMTestAccount.keyBody))
    }

    @Test("the message carries the token, the data fields, TTL, Topic and Urgency as android fields")
    func messageShape() throws {
        let fixture = try FCMHandlerFixture()
        let response = fixture.answer(webPushRequest(path: "/relay-to/droid/fcm/\(testFCMToken)/acct%2F1", ttl: "60",
                                                     urgency: "low", topic: "chat"))
        #expect(response?.status == 201)
        let sent = try #require(fixture.fcmSender.sent.first)
        #expect(sent.token.text == testFCMToken)
        #expect(sent.account.projectID == "droid")
        let body = String(decoding: sent.body, as: UTF8.self)
        #expect(body.hasPrefix(#"{"message":{"token":"\#(testFCMToken)","data":{"p":""#))
        #expect(body.contains(#""x":"acct/1""#))
        #expect(body.contains(#""ttl":"60s""#))
        #expect(body.contains(#""collapse_key":"chat""#))
        #expect(body.contains(#""priority":"normal""#))
    }

    @Test("a body that does not fit FCM's data limit goes without its ciphertext: 201, payload_dropped")
    func payloadDropped() throws {
        let metrics = RelayMetrics(connections: HTTP1ListenerCounters(maxConnections: 10), maxInFlight: 10, inFlight: { 0 })
        let fixture = try FCMHandlerFixture(metrics: metrics)
        let response = fixture.answer(webPushRequest(path: "/relay-to/fcm/\(testFCMToken)",
                                                     body: [UInt8](repeating: 0xAB, count: 4000)))
        #expect(response?.status == 201)
        let body = String(decoding: try #require(fixture.fcmSender.sent.first).body, as: UTF8.self)
        #expect(!body.contains(#""p":"#))
        #expect(body.contains(#""notification":{"title":"#))
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains(#"toot_relay_notifications_total{app="default",service="fcm",environment="",status="201",reason="payload_dropped"} 1"#))
    }

    @Test("a token that is not FCM's syntax is 400 before FCM is asked", arguments: [
        "a.b", "abc%3Adef", String(repeating: "x", count: 4097), "%00",
    ])
    func badToken(_ token: String) throws {
        let fixture = try FCMHandlerFixture()
        let response = fixture.answer(webPushRequest(path: "/relay-to/fcm/\(token)"))
        #expect(response?.status == 400)
        #expect(fixture.fcmSender.sent.isEmpty)
    }

    @Test("an app without FCM credentials, or a loop without an FCM client: 503, the subscription kept")
    func noFCM() throws {
        for (fixture, path) in [(try FCMHandlerFixture(), "/relay-to/ios/fcm/\(testFCMToken)"),
                                (try FCMHandlerFixture(withFCMClient: false), "/relay-to/fcm/\(testFCMToken)")] {
            let response = fixture.answer(webPushRequest(path: path))
            #expect(response?.status == 503)
            #expect(fcmHeader(response, "Retry-After") == String(RetryAfter.unknownApp))
            #expect(fixture.fcmSender.sent.isEmpty)
            #expect(fixture.apnsSender.sent.isEmpty)
        }
    }

    @Test("unknown and retired apps answer as on the APNs route")
    func unknownAndRetired() throws {
        let fixture = try FCMHandlerFixture()
        #expect(fixture.answer(webPushRequest(path: "/relay-to/nope/fcm/\(testFCMToken)"))?.status == 503)
        #expect(fixture.answer(webPushRequest(path: "/relay-to/old/fcm/\(testFCMToken)"))?.status == 410)
        #expect(fixture.fcmSender.sent.isEmpty)
    }

    @Test("restricted-only apps refuse an unrestricted FCM endpoint as they do an APNs one")
    func restrictedOnly() throws {
        let fixture = try FCMHandlerFixture(restrictedOnly: true)
        #expect(fixture.answer(webPushRequest(path: "/relay-to/fcm/\(testFCMToken)"))?.status == 403)
        // Restricted without VAPID headers: 401, as on the APNs route.
        let hash = String(repeating: "A", count: 43)
        let response = fixture.answer(webPushRequest(path: "/relay-to/fcm/\(testFCMToken)?vapid=\(hash)"))
        #expect(response?.status == 401)
        #expect(fixture.fcmSender.sent.isEmpty)
    }

    @Test("the APNs URLs of the same apps still go to APNs")
    func apnsUntouched() throws {
        let fixture = try FCMHandlerFixture()
        var delivered: HTTP1Response?
        #expect(fixture.handler.handle(webPushRequest(), completion: { delivered = $0 }) == nil)
        fixture.apnsSender.completeAll()
        #expect(delivered?.status == 201)
        #expect(fixture.fcmSender.sent.isEmpty)
        #expect(fixture.apnsSender.sent.count == 1)
    }

    @Test("an app's health names FCM when FCM rejects its service account")
    func health() throws {
        let metrics = RelayMetrics(connections: HTTP1ListenerCounters(maxConnections: 10), maxInFlight: 10, inFlight: { 0 })
        let fixture = try FCMHandlerFixture(metrics: metrics, outcome: { _ in Self.failed(401, .thirdPartyAuthError) })
        metrics.setApps(FCMHandlerFixture.apps(fcmHealth: fixture.fcmHealth))
        _ = fixture.answer(webPushRequest(path: "/relay-to/fcm/\(testFCMToken)"))
        let response = fixture.answer(HTTP1Request(method: "GET", target: "/relay-to/_health/default", version: .http1_1,
                                                   headers: [:], body: [], keepAlive: true))
        #expect(response?.status == 503)
        let text = String(decoding: response?.body ?? [], as: UTF8.self)
        #expect(text.contains("FCM"))
        // APNs still serves the app: the relay as a whole is healthy.
        let whole = fixture.answer(HTTP1Request(method: "GET", target: "/relay-to/_health", version: .http1_1,
                                                headers: [:], body: [], keepAlive: true))
        #expect(whole?.status == 200)
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains(#"toot_relay_fcm_credentials_rejected{app="default"} 1"#))
        #expect(exposition.contains(#"toot_relay_fcm_credentials_rejected{app="droid"} 0"#))
        #expect(exposition.contains(#"toot_relay_apns_credentials_rejected{app="default"} 0"#))
        #expect(!exposition.contains(#"toot_relay_apns_credentials_rejected{app="droid"}"#))
        #expect(exposition.contains(#"toot_relay_notifications_total{app="default",service="fcm",environment="",status="502",reason="THIRD_PARTY_AUTH_ERROR"} 1"#))
    }
}
