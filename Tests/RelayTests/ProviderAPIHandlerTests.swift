import AsyncPush
import Delivery
import EventLoop
import APNs
import APNsCore
import Feedback
import Foundation
import HTTPCore
import ProviderAPI
import Provisioning
import RelayCore
import Testing
import TestSupport
import XMLRPC

@testable import Relay

/// The provider API's handler over a fake sender: keys, the
/// gorush answer after every token's outcome, the proxy's APNs-shaped
/// answers, pyapns' calls, and the feedback list every path fills.
private struct APIFixture {
    static let tootKey = "toot-key-0123456789abcdef"
    static let allKey = "every-app-key-0123456789"
    static let betaTopic = "com.example.beta"

    let apps = RelayApps([
        RelayApp(topic: "com.example.app"),
        RelayApp(id: "beta", topic: APIFixture.betaTopic, production: CredentialID(2), development: CredentialID(2)),
    ], defaultAppID: RelayApp.defaultID)
    let sender: FakeSender
    let handler: ProviderAPIHandler
    let context: ProviderAPIContext
    let catalog = APNsCredentialCatalog(caFile: nil)
    let log = CapturedLog()

    /// APNs answers each token by its first two hex digits: `41` → 410
    /// Unregistered, `40` → 400 BadDeviceToken, else 200.
    /// A loop that never runs: the asynchronous queue's retry timers wait
    /// on it, and its first tries need none.
    let loop: EventLoop

    init(keys: [APIKeyEntry]? = nil, async: AsyncPushes = AsyncPushes(byDefault: false, maxTries: 5, maxPending: 100))
        throws {
        loop = try EventLoop()
        sender = FakeSender(outcome: { notification in
            switch notification.deviceToken.prefix(2) {
            case "41": .apns(status: 410, reason: .unregistered, apnsID: "A-410")
            case "40": .apns(status: 400, reason: .badDeviceToken, apnsID: "A-400")
            default: .apns(status: 200, reason: nil, apnsID: "A-200")
            }
        })
        let entries = try keys ?? [
            APIKeyEntry(name: "toot", key: APIKey(validating: Self.tootKey), apps: .only(["default"])),
            APIKeyEntry(name: "all", key: APIKey(validating: Self.allKey), apps: .all),
        ]
        let keyring = try APIKeyring(entries)
        context = ProviderAPIContext(
            keyring: keyring, provisioned: ProvisionedApps(catalog: catalog),
            feedback: FeedbackSink(store: FeedbackStore(maxPerApp: 100), hook: nil),
            limits: ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 10_000),
            xmlLimits: XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 32, maxElements: 100_000, maxStringBytes: 1 << 20),
            provisionDirectory: nil, async: async)
        handler = ProviderAPIHandler(sender: sender, apps: apps, context: context,
                                     counters: InFlightDeliveries(maxInFlight: 10_000),
                                     logger: log.logger, loop: loop)
    }

    /// The answer, after the fake APNs answered everything sent.
    func answer(_ target: String, method: String = "POST", key: String? = APIFixture.allKey,
                headers: [(String, String)] = [], body: String = "") -> HTTP1Response? {
        var fields = HTTPHeaders()
        if let key { fields.append(name: "Authorization", value: "Bearer " + key) }
        for (name, value) in headers { fields.append(name: name, value: value) }
        let request = HTTP1Request(method: method, target: target, version: .http1_1, headers: fields,
                                   body: Array(body.utf8), keepAlive: true)
        var delivered: HTTP1Response?
        if let immediate = handler.handle(request, completion: { delivered = $0 }) { return immediate }
        #expect(delivered == nil, "the handler completed inside handle")
        sender.completeAll()
        return delivered
    }
}

private func token(_ prefix: String, _ index: Int = 0) -> String {
    prefix + String(repeating: "0", count: 60) + String(format: "%02d", index)
}

private func json(_ response: HTTP1Response?) throws -> [String: Any] {
    let body = try #require(response?.body)
    return try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
}

@Suite("Provider API handler")
struct ProviderAPIHandlerTests {
    @Test("healthz answers 200 with no key, as gorush's heartbeat")
    func healthNeedsNoKey() throws {
        let fixture = try APIFixture()
        #expect(fixture.answer("/healthz", method: "GET", key: nil)?.status == 200)
        #expect(fixture.answer("/healthz", method: "HEAD", key: nil)?.status == 200)
    }

    @Test("a request without a key, or with a key the relay does not have, is 401 and sends nothing", arguments: [
        nil, "not-a-key-of-this-relay-0000",
    ])
    func unknownKeysAreRefused(key: String?) throws {
        let fixture = try APIFixture()
        let body = #"{"notifications":[{"tokens":["\#(token("aa"))"],"platform":1,"message":"hi"}]}"#
        let response = fixture.answer("/api/push", key: key, body: body)
        #expect(response?.status == 401)
        #expect(response?.headers.contains { $0.name == "WWW-Authenticate" } == true)
        #expect(fixture.sender.sent.isEmpty)
    }

    @Test("a key without the app a notification goes to is 403 and sends none of the request")
    func keyWithoutTheAppIsForbidden() throws {
        let fixture = try APIFixture()
        let body = #"{"notifications":[{"tokens":["\#(token("aa"))"],"platform":1,"message":"a"},"#
            + #"{"tokens":["\#(token("aa", 1))"],"platform":1,"topic":"\#(APIFixture.betaTopic)","message":"b"}]}"#
        #expect(fixture.answer("/api/push", key: APIFixture.tootKey, body: body)?.status == 403)
        #expect(fixture.sender.sent.isEmpty)
    }

    @Test("a gorush push answers after APNs answered every token, with one log per failed token")
    func pushAnswersWithTheFailures() throws {
        let fixture = try APIFixture()
        let tokens = [token("aa", 1), token("41", 2), token("40", 3), token("aa", 4)]
        let body = #"{"notifications":[{"tokens":["\#(tokens.joined(separator: "\",\""))"],"platform":1,"message":"hi","topic":"\#(APIFixture.betaTopic)"}]}"#
        let response = fixture.answer("/api/push", body: body)
        #expect(response?.status == 200)
        let answer = try json(response)
        #expect(answer["success"] as? String == "ok")
        let logs = try #require(answer["logs"] as? [[String: Any]])
        #expect(Set(logs.compactMap { $0["token"] as? String }) == [tokens[1], tokens[2]])
        #expect(Set(logs.compactMap { $0["status"] as? Int }) == [410, 400])
        #expect(logs.allSatisfy { $0["app"] as? String == "beta" && $0["type"] as? String == "failed-push" })
        // Every token went out on beta's credential with beta's topic.
        #expect(fixture.sender.sent.count == 4)
        #expect(fixture.sender.sent.allSatisfy { $0.credential == CredentialID(2) })
        #expect(fixture.sender.sent.allSatisfy { n in n.headers.contains { $0 == HTTPField(name: "apns-topic", value: APIFixture.betaTopic) } })
        // The dead tokens are in beta's feedback list, and the read clears it.
        let listBody = try #require(fixture.answer("/api/feedback/beta", method: "GET")?.body)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(listBody)) as? [[String: Any]])
        #expect(Set(listed.compactMap { $0["token"] as? String }) == [tokens[1], tokens[2]])
        #expect(fixture.answer("/api/feedback/beta", method: "GET")?.body == Array("[]".utf8))
    }

    @Test("a notification for a topic no app has fails alone, as logs, and the others are sent")
    func unknownTopicFailsAlone() throws {
        let fixture = try APIFixture()
        let body = #"{"notifications":[{"tokens":["\#(token("aa"))"],"platform":1,"topic":"com.nobody","message":"x"},"#
            + #"{"tokens":["\#(token("aa", 1))"],"platform":1,"message":"y"}]}"#
        let answer = try json(fixture.answer("/api/push", body: body))
        let logs = try #require(answer["logs"] as? [[String: Any]])
        #expect(logs.count == 1)
        #expect(logs.first?["token"] as? String == token("aa"))
        #expect(fixture.sender.sent.map(\.deviceToken) == [token("aa", 1)])
    }

    @Test("malformed JSON is 400 with gorush's error JSON, nothing sent")
    func malformedJSONIs400() throws {
        let fixture = try APIFixture()
        let response = fixture.answer("/api/push", body: "{\"notifications\":")
        #expect(response?.status == 400)
        #expect(try json(response)["code"] as? Int == 400)
        #expect(fixture.sender.sent.isEmpty)
    }

    @Test("the proxy sends Apple's request with the app of apns-topic and answers as APNs did")
    func proxyAnswersAsAPNs() throws {
        let fixture = try APIFixture()
        let payload = #"{"aps":{"alert":"Hello"}}"#
        let ok = fixture.answer("/3/device/\(token("aa"))", headers: [("apns-topic", APIFixture.betaTopic),
                                                                          ("apns-push-type", "alert")], body: payload)
        #expect(ok?.status == 200)
        #expect(ok?.body.isEmpty == true)
        #expect(ok?.headers.contains { $0.name == "apns-id" } == true)
        let sent = try #require(fixture.sender.sent.first)
        #expect(sent.credential == CredentialID(2))
        #expect(sent.payload == Array(payload.utf8))
        #expect(sent.environment == .production)

        let gone = fixture.answer("/development/3/device/\(token("41"))",
                                  headers: [("apns-topic", APIFixture.betaTopic)], body: payload)
        #expect(gone?.status == 410)
        #expect(try json(gone)["reason"] as? String == "Unregistered")
        #expect(fixture.sender.sent.last?.environment == .development)
    }

    @Test("the proxy passes APNs' apns-unique-id back unchanged, when APNs sent one; /api/push has no such field")
    func proxyPassesUniqueIDBack() throws {
        let fixture = try APIFixture()
        let payload = #"{"aps":{"alert":"Hello"}}"#
        let headers = [("apns-topic", APIFixture.betaTopic)]
        let none = fixture.answer("/development/3/device/\(token("aa"))", headers: headers, body: payload)
        #expect(none?.headers.contains { $0.name == "apns-unique-id" } == false)
        let uniqueID = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
        fixture.sender.uniqueID = uniqueID
        for prefix in ["aa", "41"] {
            let answer = fixture.answer("/development/3/device/\(token(prefix))", headers: headers, body: payload)
            #expect(answer?.headers.filter { $0.name == "apns-unique-id" }.map(\.value) == [uniqueID])
        }
        let push = fixture.answer("/api/push", body: #"{"notifications":[{"tokens":["\#(token("aa"))"],"platform":1,"#
            + #""topic":"\#(APIFixture.betaTopic)","message":"hi"}]}"#)
        #expect(push?.status == 200)
        #expect(push?.headers.contains { $0.name == "apns-unique-id" } == false)
    }

    @Test("pyapns' notify for an app nobody provisioned is fault 404, nothing sent")
    func notifyUnknownAppIsFault404() throws {
        let fixture = try APIFixture()
        let call = """
            <?xml version='1.0'?><methodCall><methodName>notify</methodName><params>\
            <param><value><string>nobody</string></value></param>\
            <param><value><string>\(token("aa"))</string></value></param>\
            <param><value><struct><member><name>aps</name><value><struct><member><name>alert</name>\
            <value><string>hi</string></value></member></struct></value></member></struct></value></param>\
            </params></methodCall>
            """
        let response = fixture.answer("/RPC2", body: call)
        #expect(response?.status == 200)
        let text = String(decoding: response?.body ?? [], as: UTF8.self)
        #expect(text.contains("<fault>"))
        #expect(text.contains("<int>404</int>"))
        #expect(fixture.sender.sent.isEmpty)
    }

    @Test("provision adds an app by its certificate, and notify then sends with it")
    func provisionThenNotify() throws {
        let fixture = try APIFixture()
        let pem = String(decoding: try TestCertificates.bytes("client.pem") + TestCertificates.bytes("client.key"),
                         as: UTF8.self)
        let escaped = pem.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let provision = """
            <?xml version='1.0'?><methodCall><methodName>provision</methodName><params>\
            <param><value><string>toot-sandbox</string></value></param>\
            <param><value><string>\(escaped)</string></value></param>\
            <param><value><string>sandbox</string></value></param>\
            <param><value><int>15</int></value></param></params></methodCall>
            """
        let provisioned = fixture.answer("/", body: provision)
        let provisionAnswer = String(decoding: provisioned?.body ?? [], as: UTF8.self)
        #expect(provisionAnswer.contains("<nil/>"))
        let app = try #require(fixture.context.provisioned.app(id: "toot-sandbox"))
        #expect(app.production == nil)
        let credential = try #require(app.development)
        #expect(fixture.catalog.contains(credential))

        let notify = """
            <?xml version='1.0'?><methodCall><methodName>notify</methodName><params>\
            <param><value><string>toot-sandbox</string></value></param>\
            <param><value><array><data><value><string>\(token("aa"))</string></value>\
            <value><string>\(token("41"))</string></value></data></array></value></param>\
            <param><value><array><data>\
            <value><struct><member><name>aps</name><value><struct><member><name>alert</name><value><string>one</string></value></member></struct></value></member></struct></value>\
            <value><struct><member><name>aps</name><value><struct><member><name>alert</name><value><string>two</string></value></member></struct></value></member></struct></value>\
            </data></array></value></param></params></methodCall>
            """
        let notified = fixture.answer("/", body: notify)
        let notifyAnswer = String(decoding: notified?.body ?? [], as: UTF8.self)
        #expect(notifyAnswer.contains("<nil/>"))
        #expect(fixture.sender.sent.count == 2)
        #expect(fixture.sender.sent.allSatisfy { $0.credential == credential && $0.environment == .development })
        #expect(fixture.context.feedback.store.take(app: "toot-sandbox").map(\.token) == [token("41")])
    }
}

@Suite("The provider API's asynchronous /api/push")
struct ProviderAPIAsyncPushTests {
    static func body(async: Bool?, _ tokens: [String]) -> String {
        let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
        let choice = async.map { "\"async\":\($0)," } ?? ""
        return "{\(choice)\"notifications\":[{\"platform\":1,\"tokens\":[\(list)],\"message\":\"hi\"}]}"
    }

    /// Sends without letting the fake APNs answer: an asynchronous answer
    /// must come before it.
    fileprivate static func send(_ fixture: APIFixture, _ body: String) -> HTTP1Response? {
        var fields = HTTPHeaders()
        fields.append(name: "Authorization", value: "Bearer " + APIFixture.allKey)
        let request = HTTP1Request(method: "POST", target: "/api/push", version: .http1_1, headers: fields,
                                   body: Array(body.utf8), keepAlive: true)
        return fixture.handler.handle(request) { _ in Issue.record("an asynchronous request completed later") }
    }

    @Test("async true is answered with gorush's async body before APNs answers, then every token is delivered")
    func answeredAtOnce() throws {
        let fixture = try APIFixture()
        let response = try #require(Self.send(fixture, Self.body(async: true, [token("aa", 1), token("41", 2)])))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"counts":2,"logs":[],"success":"ok"}"#)
        #expect(fixture.sender.sent.count == 2)
        #expect(fixture.context.async.bound.pending == 2)
        fixture.sender.completeAll()
        #expect(fixture.context.async.bound.pending == 0)
        #expect(fixture.context.async.counts.delivered == 1)
        #expect(fixture.context.async.counts.failed == 1)
        #expect(fixture.context.feedback.store.take(app: "default").map(\.token) == [token("41", 2)])
        fixture.handler.flushLog()
        #expect(fixture.log.lines.contains { $0.contains("async notifications=1 tokens=2 service=apns queued=2 failed=0") })
    }

    @Test("API_ASYNC makes a request that does not choose asynchronous, and async false synchronous")
    func defaultAndChoice() throws {
        let fixture = try APIFixture(async: AsyncPushes(byDefault: true, maxTries: 5, maxPending: 100))
        let queued = try #require(Self.send(fixture, Self.body(async: nil, [token("aa", 3)])))
        #expect(String(decoding: queued.body, as: UTF8.self) == #"{"counts":1,"logs":[],"success":"ok"}"#)
        fixture.sender.completeAll()
        let sync = try json(fixture.answer("/api/push", body: Self.body(async: false, [token("40", 4)])))
        #expect(sync["counts"] as? Int == 1)
        let logs = try #require(sync["logs"] as? [[String: Any]])
        #expect(logs.map { $0["error"] as? String } == ["BadDeviceToken"])
        #expect(fixture.context.async.counts.delivered == 1)
        #expect(fixture.context.async.bound.pending == 0)
    }

    @Test("a request whose tokens do not all fit under API_ASYNC_MAX_PENDING is refused whole: 503, Retry-After, nothing sent")
    func overTheBound() throws {
        let fixture = try APIFixture(async: AsyncPushes(byDefault: true, maxTries: 5, maxPending: 2))
        let first = try #require(Self.send(fixture, Self.body(async: nil, [token("aa", 5)])))
        #expect(first.status == 200)
        let refused = try #require(Self.send(fixture, Self.body(async: nil, [token("aa", 6), token("aa", 7)])))
        #expect(refused.status == 503)
        #expect(refused.headers.first { $0.name == "Retry-After" }?.value == "5")
        let body = try json(refused)
        #expect(body["code"] as? Int == 503)
        #expect((body["message"] as? String)?.contains("API_ASYNC_MAX_PENDING") == true)
        #expect(fixture.sender.sent.count == 1, "nothing of the refused request is sent")
        #expect(fixture.context.async.bound.pending == 1)
        fixture.sender.completeAll()
        #expect(fixture.context.async.bound.pending == 0)
    }

    @Test("an async that is not a boolean is 400 in gorush's error JSON, nothing sent",
          arguments: [#""true""#, "1", "{}", "[]"])
    func hostileAsync(_ value: String) throws {
        let fixture = try APIFixture()
        let response = fixture.answer("/api/push",
                                      body: #"{"async":"# + value + #","notifications":[{"platform":1,"tokens":[""# + token("aa") + #""]}]}"#)
        #expect(response?.status == 400)
        #expect((try json(response)["message"] as? String)?.hasPrefix("async must be true or false") == true)
        #expect(fixture.sender.sent.isEmpty)
    }
}
