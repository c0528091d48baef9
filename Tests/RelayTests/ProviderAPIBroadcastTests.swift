import APNs
import APNsCore
import AsyncPush
import Delivery
import EventLoop
import Feedback
import HTTPCore
import ProviderAPI
import Provisioning
import RelayCore
import Testing
import TestSupport
import XMLRPC

@testable import Relay

/// The provider API's broadcast calls over a fake client: what goes to
/// APNs (host, environment, the app's credential, APNs' fields only), the
/// answer passed back, and the relay's own refusals with nothing sent.
@Suite("Provider API: broadcast calls")
struct ProviderAPIBroadcastTests {
    static let key = "every-app-key-0123456789"
    static let otherKey = "other-app-key-0123456789"
    static let bundle = "com.example.live"
    static let channel = "dGVzdC1jaGFubmVsLWlkMTI="
    static let payload = #"{"aps":{"event":"update","content-state":{}}}"#

    final class Fixture {
        let sender = FakeBroadcastSender { request in
            .answered(status: request.method == "POST" && request.host == .channelManagement ? 201 : 200,
                      headers: [HTTPField(name: "apns-request-id", value: "from-apns")], body: Array("{}".utf8))
        }
        let handler: ProviderAPIHandler
        let loop: EventLoop

        init() throws {
            loop = try EventLoop()
            let apps = RelayApps([
                RelayApp(topic: "com.example.app"),
                RelayApp(id: "live", topic: ProviderAPIBroadcastTests.bundle, production: CredentialID(3), development: nil),
            ], defaultAppID: RelayApp.defaultID)
            let keyring = try APIKeyring([
                APIKeyEntry(name: "all", key: APIKey(validating: ProviderAPIBroadcastTests.key), apps: .all),
                APIKeyEntry(name: "other", key: APIKey(validating: ProviderAPIBroadcastTests.otherKey),
                            apps: .only(["default"])),
            ])
            let context = ProviderAPIContext(
                keyring: keyring, provisioned: ProvisionedApps(catalog: APNsCredentialCatalog(caFile: nil)),
                feedback: FeedbackSink(store: FeedbackStore(maxPerApp: 10), hook: nil),
                limits: ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 100),
                xmlLimits: XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 32, maxElements: 1000, maxStringBytes: 1 << 20),
                provisionDirectory: nil, async: AsyncPushes(byDefault: false, maxTries: 5, maxPending: 100))
            handler = ProviderAPIHandler(sender: sender, apps: apps, context: context,
                                         counters: InFlightDeliveries(maxInFlight: 100), logger: CapturedLog().logger,
                                         loop: loop)
        }

        func answer(_ method: String, _ target: String, key: String = ProviderAPIBroadcastTests.key,
                    headers: [(String, String)] = [], body: String = "") -> HTTP1Response? {
            var fields = HTTPHeaders()
            fields.append(name: "Authorization", value: "Bearer " + key)
            for (name, value) in headers { fields.append(name: name, value: value) }
            let request = HTTP1Request(method: method, target: target, version: .http1_1, headers: fields,
                                       body: Array(body.utf8), keepAlive: true)
            var delivered: HTTP1Response?
            if let immediate = handler.handle(request, completion: { delivered = $0 }) { return immediate }
            sender.completeAll()
            return delivered
        }
    }

    /// (method, target, headers, body; what goes to APNs: host, environment, path, fields).
    static let sent: [(String, String, [(String, String)], String, APNsBroadcastHost, String, [String])] = [
        ("POST", "/4/broadcasts/apps/\(bundle)",
         [("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", "1"), ("x-other", "y")],
         payload, .notifications, "/4/broadcasts/apps/\(bundle)", ["apns-channel-id", "apns-push-type", "apns-priority"]),
        ("POST", "/1/apps/\(bundle)/channels", [("apns-request-id", "r")],
         #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#, .channelManagement, "/1/apps/\(bundle)/channels",
         ["apns-request-id"]),
        ("GET", "/1/apps/\(bundle)/channels", [("apns-channel-id", channel)], "", .channelManagement,
         "/1/apps/\(bundle)/channels", ["apns-channel-id"]),
        ("DELETE", "/1/apps/\(bundle)/channels", [("apns-channel-id", channel)], "", .channelManagement,
         "/1/apps/\(bundle)/channels", ["apns-channel-id"]),
        ("GET", "/1/apps/\(bundle)/all-channels", [], "", .channelManagement, "/1/apps/\(bundle)/all-channels", []),
    ]

    @Test("each call goes to its host with the app's credential and APNs' fields; APNs' answer comes back",
          arguments: sent)
    func forwarded(_ row: (String, String, [(String, String)], String, APNsBroadcastHost, String, [String])) throws {
        let fixture = try Fixture()
        let response = try #require(fixture.answer(row.0, row.1, headers: row.2, body: row.3))
        let call = try #require(fixture.sender.sentCalls.first)
        #expect(call.host == row.4)
        #expect(call.environment == .production)
        #expect(call.credential == CredentialID(3))
        #expect(call.method == row.0)
        #expect(call.path == row.5)
        #expect(call.headers.map(\.name) == row.6)
        #expect(call.body == (row.0 == "POST" ? Array(row.3.utf8) : []))
        #expect(response.status == (row.0 == "POST" && row.4 == .channelManagement ? 201 : 200))
        #expect(response.headers.contains(HTTPField(name: "apns-request-id", value: "from-apns")))
        #expect(response.body == Array("{}".utf8))
    }

    /// (method, target, key, headers, status, reason): refused by the relay, nothing sent.
    static let refused: [(String, String, String, [(String, String)], Int, String?)] = [
        ("GET", "/1/apps/com.example.nobody/all-channels", key, [], 403, "TopicMismatch"),
        // The app has no development credential.
        ("GET", "/development/1/apps/\(bundle)/all-channels", key, [], 403, "TopicMismatch"),
        ("GET", "/1/apps/\(bundle)/channels", key, [], 400, "MissingChannelId"),
        ("PUT", "/1/apps/\(bundle)/all-channels", key, [], 405, "MethodNotAllowed"),
        // A key without the app: the provider API's 403, as for /3/device.
        ("GET", "/1/apps/\(bundle)/all-channels", otherKey, [], 403, nil),
    ]

    @Test("the relay's own refusals, nothing sent", arguments: refused)
    func refusal(_ row: (String, String, String, [(String, String)], Int, String?)) throws {
        let fixture = try Fixture()
        let response = try #require(fixture.answer(row.0, row.1, key: row.2, headers: row.3 + [("apns-request-id", "r")]))
        #expect(response.status == row.4)
        if let reason = row.5 {
            #expect(String(decoding: response.body, as: UTF8.self) == "{\"reason\":\"\(reason)\"}")
            #expect(response.headers.contains(HTTPField(name: "apns-request-id", value: "r")))
        }
        #expect(fixture.sender.sentCalls.isEmpty)
    }
}
