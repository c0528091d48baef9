import APNs
import APNsCore
import AsyncPush
import Delivery
import EventLoop
import FCMCore
import Feedback
import Foundation
import HTTP1
import HTTPCore
import Observability
import ProviderAPI
import Provisioning
import RelayCore
import Testing
import TestSupport
import XMLRPC

@testable import Relay

/// gorush's `/api/push` with Android tokens (`"platform": 2`) over a fake
/// APNs and a fake FCM: the apps of `FCMHandlerFixture` (the default app
/// and `droid` with FCM credentials, `ios` without).
struct ProviderFCMFixture {
    static let droidKey = "droid-key-0123456789abcdef"

    let apnsSender = FakeSender()
    let fcmSender: FakeFCMSender
    let store = FeedbackStore(maxPerApp: 100)
    let fcmHealth = AppHealth()
    let log = CapturedLog()
    let handler: ProviderAPIHandler
    /// A loop that never runs: asynchronous retries wait on it.
    let loop: EventLoop

    init(withFCMClient: Bool = true, keys: [APIKeyEntry] = [],
         async: AsyncPushes = AsyncPushes(byDefault: false, maxTries: 3, maxPending: 100), metrics: ProviderMetrics? = nil,
         outcome: @escaping (FCMNotification) -> FCMOutcome = { _ in
             .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
         }) throws {
        loop = try EventLoop()
        fcmSender = FakeFCMSender(outcome: outcome)
        let loopContext = LoopContext(sender: apnsSender, fcmSender: withFCMClient ? fcmSender : nil,
                                      apps: FCMHandlerFixture.apps(fcmHealth: fcmHealth), logger: log.logger, loop: loop,
                                      providerMetrics: metrics)
        let context = ProviderAPIContext(
            keyring: try APIKeyring(keys), provisioned: ProvisionedApps(catalog: APNsCredentialCatalog(caFile: nil)),
            feedback: FeedbackSink(store: store, hook: nil),
            limits: ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 10_000),
            xmlLimits: XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 32, maxElements: 100_000, maxStringBytes: 1 << 20),
            provisionDirectory: nil, async: async)
        handler = ProviderAPIHandler(loopContext: loopContext, context: context,
                                     counters: InFlightDeliveries(maxInFlight: 10_000), loop: loop)
    }

    /// `/api/push`'s answer, once both fake services answered all they got.
    func push(_ body: String, key: String? = nil) -> HTTP1Response? {
        var headers = HTTPHeaders()
        if let key { headers.append(name: "Authorization", value: "Bearer " + key) }
        let request = HTTP1Request(method: "POST", target: "/api/push", version: .http1_1, headers: headers,
                                   body: Array(body.utf8), keepAlive: true)
        var delivered: HTTP1Response?
        if let immediate = handler.handle(request, completion: { delivered = $0 }) { return immediate }
        #expect(delivered == nil, "the handler completed inside handle")
        apnsSender.completeAll()
        fcmSender.completeAll()
        return delivered
    }

    /// The answer's JSON, `counts` and `logs`.
    func answer(_ body: String, key: String? = nil) throws -> (counts: Int, logs: [[String: Any]]) {
        let response = try #require(push(body, key: key))
        #expect(response.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(json["success"] as? String == "ok")
        return (try #require(json["counts"] as? Int), try #require(json["logs"] as? [[String: Any]]))
    }
}

let otherFCMToken = "dAbc-2:APA91bOtherToken_0123456789"
private let iosToken = String(repeating: "ab", count: 32)

@Suite("Provider API: platform 2 through FCM")
struct ProviderAPIFCMTests {
    static func failed(_ status: Int, _ reason: FCMReason, namesToken: Bool = false, retryAfter: Int? = nil,
                       afterRefresh: Bool = false) -> FCMOutcome {
        FCMWebPushHandlerTests.failed(status, reason, namesToken: namesToken, retryAfter: retryAfter,
                                      afterRefresh: afterRefresh)
    }

    /// FCM's answers → the token's log (FCM's status and code when it
    /// answered; nil: no log), whether the token joins the feedback list,
    /// whether the app's FCM credentials are marked rejected.
    static let table: [(String, FCMOutcome, log: (status: Int?, reason: String?)?, dead: Bool, rejected: Bool)] = [
        ("200", .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false), nil, false, false),
        ("404 UNREGISTERED", failed(404, .unregistered), (404, "UNREGISTERED"), true, false),
        ("403 SENDER_ID_MISMATCH", failed(403, .senderIDMismatch), (403, "SENDER_ID_MISMATCH"), true, false),
        ("400 INVALID_ARGUMENT naming message.token", failed(400, .invalidArgument, namesToken: true),
         (400, "INVALID_ARGUMENT"), true, false),
        ("400 INVALID_ARGUMENT about anything else", failed(400, .invalidArgument), (400, "INVALID_ARGUMENT"), false, false),
        ("429 QUOTA_EXCEEDED", failed(429, .quotaExceeded, retryAfter: 120), (429, "QUOTA_EXCEEDED"), false, false),
        ("500 INTERNAL", failed(500, .internalError), (500, "INTERNAL"), false, false),
        ("503 UNAVAILABLE", failed(503, .unavailable), (503, "UNAVAILABLE"), false, false),
        ("401 THIRD_PARTY_AUTH_ERROR", failed(401, .thirdPartyAuthError), (401, "THIRD_PARTY_AUTH_ERROR"), false, true),
        ("403 after a token refresh", failed(403, .permissionDenied, afterRefresh: true), (403, "PERMISSION_DENIED"),
         false, true),
        ("no answer within FCM_TIMEOUT", .answerTimedOut, (nil, nil), false, false),
        ("token endpoint refuses the account", .noAccessToken(.credentialsRejected(detail: "invalid_grant")),
         (nil, nil), false, true),
        ("no connection up", .allConnectionsDown, (nil, nil), false, false),
    ]

    @Test("each FCM verdict: gorush's answer (counts, the android log), the feedback list, the app's health",
          arguments: table)
    func verdictTable(_ row: (String, FCMOutcome, log: (status: Int?, reason: String?)?, dead: Bool, rejected: Bool))
        throws {
        let fixture = try ProviderFCMFixture(outcome: { _ in row.1 })
        let answer = try fixture.answer(#"{"notifications":[{"notif_id":"n-7","tokens":["\#(testFCMToken)"],"#
            + #""platform":2,"message":"hello"}]}"#)
        #expect(answer.counts == 1, "\(row.0)")
        #expect(fixture.fcmSender.sent.count == 1)
        #expect(fixture.apnsSender.sent.isEmpty)
        if let expected = row.log {
            let log = try #require(answer.logs.first, "\(row.0)")
            #expect(answer.logs.count == 1)
            #expect(log["type"] as? String == "failed-push")
            #expect(log["platform"] as? String == "android", "\(row.0)")
            #expect(log["token"] as? String == testFCMToken)
            #expect(log["notif_id"] as? String == "n-7")
            #expect(log["message"] as? String == "hello")
            #expect(log["app"] as? String == RelayApp.defaultID)
            #expect(log["status"] as? Int == expected.status, "\(row.0)")
            #expect(log["reason"] as? String == expected.reason, "\(row.0)")
            #expect((log["error"] as? String)?.isEmpty == false)
        } else {
            #expect(answer.logs.isEmpty, "\(row.0)")
        }
        let entries = fixture.store.take(app: RelayApp.defaultID)
        #expect(entries.map(\.token) == (row.dead ? [testFCMToken] : []), "\(row.0)")
        #expect(entries.allSatisfy { $0.platform == .android && $0.reason == row.log?.reason })
        #expect(fixture.fcmHealth.credentialsRejected == row.rejected, "\(row.0)")
    }

    @Test("the Status push server's request, platform 2: one FCM message as gorush builds it, with the default app's account")
    func statusPushServerRequest() throws {
        let fixture = try ProviderFCMFixture()
        let answer = try fixture.answer(#"{"notifications":[{"tokens":["\#(testFCMToken)"],"platform":2,"#
            + #""message":"You have a new message","data":{"k":"v","n":3,"o":{"a":true}}}]}"#)
        #expect(answer.counts == 1)
        #expect(answer.logs.isEmpty)
        let sent = try #require(fixture.fcmSender.sent.first)
        #expect(sent.account.projectID == "toot-relay-test")
        #expect(sent.token.text == testFCMToken)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(sent.body)) as? [String: Any])
        let message = try #require(json["message"] as? [String: Any])
        #expect(message["token"] as? String == testFCMToken)
        #expect((message["notification"] as? [String: Any])?["body"] as? String == "You have a new message")
        // gorush sends every data value as a string, non-strings as JSON.
        #expect(message["data"] as? [String: String] == ["k": "v", "n": "3", "o": #"{"a":true}"#])
    }

    @Test("`app` chooses the app and its service account; an app without FCM credentials or a loop without an FCM client is a failed log per token", arguments: [
        (#","app":"droid""#, true, nil as String?),
        (#","app":"ios""#, true, "app ios has no FCM credentials"),
        ("", false, "this relay has no FCM client"),
        (#","app":"nosuch""#, true, "no app nosuch"),
    ])
    func appChoice(_ appField: String, _ withFCMClient: Bool, _ failure: String?) throws {
        let fixture = try ProviderFCMFixture(withFCMClient: withFCMClient)
        let answer = try fixture.answer(#"{"notifications":[{"tokens":["\#(testFCMToken)","\#(otherFCMToken)"],"#
            + #""platform":2,"message":"m"\#(appField)}]}"#)
        // counts: the tokens the relay sends to FCM, those of an app with FCM
        // credentials (a gorush with Android enabled).
        #expect(answer.counts == (failure == nil ? 2 : 0))
        if let failure {
            #expect(fixture.fcmSender.sent.isEmpty)
            #expect(answer.logs.map { $0["token"] as? String } == [testFCMToken, otherFCMToken])
            #expect(answer.logs.allSatisfy { $0["error"] as? String == failure && $0["platform"] as? String == "android" })
        } else {
            #expect(answer.logs.isEmpty)
            #expect(fixture.fcmSender.sent.map(\.account.projectID) == ["droid", "droid"])
        }
    }

    @Test("a key that may not send for the notification's app refuses the whole request, 403, nothing sent")
    func keyWithoutTheApp() throws {
        let key = try APIKeyEntry(name: "droid", key: APIKey(validating: ProviderFCMFixture.droidKey), apps: .only(["droid"]))
        let fixture = try ProviderFCMFixture(keys: [key])
        let body = #"{"notifications":[{"tokens":["\#(testFCMToken)"],"platform":2,"app":"droid"},"#
            + #"{"tokens":["\#(otherFCMToken)"],"platform":2}]}"#
        #expect(fixture.push(body, key: ProviderFCMFixture.droidKey)?.status == 403)
        #expect(fixture.fcmSender.sent.isEmpty)
    }

    @Test("a topic is counted and answered with one failed log, first; the tokens are sent")
    func topicIsNotServed() throws {
        let fixture = try ProviderFCMFixture()
        let answer = try fixture.answer(#"{"notifications":[{"tokens":["\#(testFCMToken)"],"platform":2,"#
            + #""topic":"news","message":"m"}]}"#)
        #expect(answer.counts == 2)
        #expect(answer.logs.map { $0["token"] as? String } == ["news"])
        #expect(answer.logs.first?["error"] as? String == ProviderAPIHandler.topicRefusal)
        #expect(fixture.fcmSender.sent.map(\.token.text) == [testFCMToken])
    }

    @Test("a token FCM could never take fails alone, INVALID_ARGUMENT; the others go")
    func badTokenFailsAlone() throws {
        let fixture = try ProviderFCMFixture()
        let answer = try fixture.answer(#"{"notifications":[{"tokens":["not a token","\#(testFCMToken)"],"platform":2}]}"#)
        #expect(answer.counts == 2)
        #expect(answer.logs.map { $0["token"] as? String } == ["not a token"])
        #expect(answer.logs.first?["reason"] as? String == "INVALID_ARGUMENT")
        #expect(fixture.fcmSender.sent.map(\.token.text) == [testFCMToken])
    }

    @Test("platform 3 is a failed log per token saying Huawei is not served, nothing sent, not counted")
    func platformThree() throws {
        let fixture = try ProviderFCMFixture()
        let answer = try fixture.answer(#"{"notifications":[{"tokens":["h1","h2"],"platform":3,"message":"m"}]}"#)
        #expect(answer.counts == 0)
        #expect(answer.logs.map { $0["token"] as? String } == ["h1", "h2"])
        #expect(answer.logs.allSatisfy { $0["platform"] as? String == "huawei" })
        #expect(answer.logs.allSatisfy { ($0["error"] as? String)?.contains("Huawei") == true })
        #expect(fixture.fcmSender.sent.isEmpty && fixture.apnsSender.sent.isEmpty)
    }

    @Test("platforms 1, 2 and 3 in one request: each token to its service, gorush's counts, every failure logged")
    func mixedPlatforms() throws {
        let fixture = try ProviderFCMFixture(outcome: { $0.token.text == otherFCMToken ? Self.failed(404, .unregistered)
                                                        : .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false) })
        let answer = try fixture.answer(#"{"notifications":["#
            + #"{"tokens":["\#(iosToken)"],"platform":1,"message":"i"},"#
            + #"{"tokens":["\#(testFCMToken)","\#(otherFCMToken)"],"platform":2,"message":"a"},"#
            + #"{"tokens":["h"],"platform":3,"message":"h"}]}"#)
        #expect(answer.counts == 3)
        #expect(fixture.apnsSender.sent.map(\.deviceToken) == [iosToken])
        #expect(fixture.fcmSender.sent.map(\.token.text) == [testFCMToken, otherFCMToken])
        let byToken = Dictionary(uniqueKeysWithValues: answer.logs.map { ($0["token"] as? String ?? "", $0) })
        #expect(Set(byToken.keys) == ["h", otherFCMToken])
        #expect(byToken[otherFCMToken]?["platform"] as? String == "android")
        #expect(byToken["h"]?["platform"] as? String == "huawei")
        #expect(fixture.store.take(app: RelayApp.defaultID).map(\.token) == [otherFCMToken])
    }

    @Test("asynchronous: Android tokens are queued with iOS ones, answered at once, delivered through FCM after")
    func asynchronous() throws {
        let async = AsyncPushes(byDefault: true, maxTries: 3, maxPending: 100)
        let fixture = try ProviderFCMFixture(async: async, outcome: {
            $0.token.text == otherFCMToken ? Self.failed(404, .unregistered)
                : .answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
        })
        let body = #"{"notifications":[{"tokens":["\#(iosToken)"],"platform":1,"message":"i"},"#
            + #"{"tokens":["\#(testFCMToken)","\#(otherFCMToken)"],"platform":2,"message":"a"}]}"#
        var delivered: HTTP1Response?
        let request = HTTP1Request(method: "POST", target: "/api/push", version: .http1_1, headers: [:],
                                   body: Array(body.utf8), keepAlive: true)
        let response = try #require(fixture.handler.handle(request) { delivered = $0 })
        #expect(delivered == nil)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"counts":3,"logs":[],"success":"ok"}"#)
        #expect(async.bound.pending == 3)
        #expect(fixture.fcmSender.pendingCount == 2)
        fixture.fcmSender.completeAll()
        fixture.apnsSender.completeAll()
        #expect(async.counts.delivered == 2)
        #expect(async.counts.failed == 1)
        #expect(async.bound.pending == 0)
        let entries = fixture.store.take(app: RelayApp.defaultID)
        #expect(entries.map(\.token) == [otherFCMToken])
        #expect(entries.first?.platform == .android)
    }

    @Test("asynchronous: over API_ASYNC_MAX_PENDING counts Android tokens too, the request refused whole")
    func asynchronousBound() throws {
        let fixture = try ProviderFCMFixture(async: AsyncPushes(byDefault: true, maxTries: 3, maxPending: 1))
        let response = fixture.push(#"{"notifications":[{"tokens":["\#(testFCMToken)","\#(otherFCMToken)"],"platform":2}]}"#)
        #expect(response?.status == 503)
        #expect(fixture.fcmSender.sent.isEmpty)
    }
}
