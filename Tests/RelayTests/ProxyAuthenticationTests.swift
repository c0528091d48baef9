import APNs
import AsyncPush
import APNsCore
import Delivery
import EventLoop
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

/// `/3/device/` through the handler: who sends (a client certificate, a
/// provider token, the API key), credentials a reload replaced, and APNs'
/// answers for what the relay refuses itself.
@Suite("Provider API handler: the proxy's authentication")
struct ProxyAuthenticationTests {
    static let key = "proxy-key-0123456789abcdef"
    static let betaTopic = "com.example.beta"
    static let certificate: [UInt8] = Array(repeating: 0x5a, count: 32)
    static let token = String(repeating: "ab", count: 32)
    static let now = 1_800_000_000

    let sender = FakeSender(outcome: { _ in .apns(status: 200, reason: nil, apnsID: nil) })
    let context: ProviderAPIContext
    let handler: ProviderAPIHandler
    let loop: EventLoop

    init() throws {
        loop = try EventLoop()
        context = ProviderAPIContext(
            keyring: try APIKeyring([APIKeyEntry(name: "all", key: try APIKey(validating: Self.key), apps: .all)]),
            provisioned: ProvisionedApps(catalog: APNsCredentialCatalog(caFile: nil)),
            feedback: FeedbackSink(store: FeedbackStore(maxPerApp: 100), hook: nil),
            limits: ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 10_000),
            xmlLimits: XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 32, maxElements: 100_000, maxStringBytes: 1 << 20),
            provisionDirectory: nil, async: AsyncPushes(byDefault: false, maxTries: 5, maxPending: 100))
        let apps = RelayApps([
            RelayApp(topic: "com.example.app"),
            RelayApp(id: "beta", topic: Self.betaTopic, production: CredentialID(2), development: CredentialID(3)),
        ], defaultAppID: RelayApp.defaultID)
        handler = ProviderAPIHandler(sender: sender, apps: apps, context: context,
                                     counters: InFlightDeliveries(maxInFlight: 100), logger: CapturedLog().logger,
                                     loop: loop, unixTime: { Self.now })
    }

    static func credentials(certificateApps: [String], tokenApps: [String]) -> ProxyCredentials {
        ProxyCredentials(
            tokenKeys: [ProxyTokenKey(keyID: "KEY1", teamID: "TEAM1", name: "token KEY1", apps: .only(tokenApps)) {
                _, signature in signature == Array("KEY1".utf8)
            }],
            certificates: [ProxyCertificate(sha256: certificate, name: "certificate", apps: .only(certificateApps))])
    }

    static func providerToken(iat: Int = now) -> String {
        let header = base64URL(#"{"alg":"ES256","kid":"KEY1"}"#)
        let claims = base64URL(#"{"iss":"TEAM1","iat":\#(iat)}"#)
        return "bearer \(header).\(claims).\(base64URL("KEY1"))"
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The answer to a proxy request with these header fields.
    func answer(_ fields: [(String, String)], path: String = "/3/device/", certificate: [UInt8]? = nil)
        -> HTTP1Response? {
        let request = HTTP1Request(method: "POST", target: path + Self.token, version: .http1_1,
                                   headers: HTTPHeaders(fields), body: Array(#"{"aps":{}}"#.utf8), keepAlive: true,
                                   clientCertificateSHA256: certificate)
        var delivered: HTTP1Response?
        let immediate = handler.device(request, environment: path.hasPrefix("/development") ? .development : .production,
                                       token: Self.token, started: 0) {
            delivered = $0
        }
        if let immediate { return immediate }
        sender.completeAll()
        return delivered
    }

    func reason(_ response: HTTP1Response?) -> String? {
        guard let body = response?.body, let object = try? JSONSerialization.jsonObject(with: Data(body)),
              let fields = object as? [String: Any] else { return nil }
        return fields["reason"] as? String
    }

    @Test("a client certificate the context knows sends for its apps, its authorization ignored")
    func certificate() {
        context.replaceProxyCredentials(Self.credentials(certificateApps: ["beta"], tokenApps: []))
        let sent = answer([("apns-topic", Self.betaTopic), ("authorization", "bearer nonsense")],
                          certificate: Self.certificate)
        #expect(sent?.status == 200)
        #expect(sender.sent.last?.credential == CredentialID(2))
        let other = answer([("apns-topic", "com.example.app")], certificate: Self.certificate)
        #expect(other?.status == 400 && reason(other) == "TopicDisallowed")
        let unknown = answer([("apns-topic", Self.betaTopic)], certificate: [0x01])
        #expect(unknown?.status == 403 && reason(unknown) == "MissingProviderToken")
        #expect(sender.sent.count == 1)
    }

    @Test("credentials a reload replaced take effect on the next request")
    func reload() {
        let token = Self.providerToken()
        context.replaceProxyCredentials(Self.credentials(certificateApps: [], tokenApps: ["default"]))
        let refused = answer([("apns-topic", Self.betaTopic), ("authorization", token)])
        #expect(refused?.status == 400 && reason(refused) == "TopicDisallowed")
        context.replaceProxyCredentials(Self.credentials(certificateApps: [], tokenApps: ["beta"]))
        #expect(answer([("apns-topic", Self.betaTopic), ("authorization", token)])?.status == 200)
        context.replaceProxyCredentials(.none)
        let gone = answer([("apns-topic", Self.betaTopic), ("authorization", token)])
        #expect(gone?.status == 403 && reason(gone) == "InvalidProviderToken")
    }

    @Test("host names the environment; a suffixed topic finds its app and goes to APNs as written")
    func environmentAndTopic() {
        let bearer = ("authorization", "Bearer " + Self.key)
        #expect(answer([bearer, ("apns-topic", Self.betaTopic), ("host", "api.sandbox.push.apple.com:443")])?.status
            == 200)
        #expect(sender.sent.last?.environment == .development && sender.sent.last?.credential == CredentialID(3))
        #expect(answer([bearer, ("apns-topic", Self.betaTopic + ".voip"), ("apns-push-type", "voip"),
                        ("host", "api.push.apple.com")], path: "/development/3/device/")?.status == 200)
        let sent = sender.sent.last
        #expect(sent?.environment == .production)
        #expect(sent?.headers.first { $0.name == "apns-topic" }?.value == Self.betaTopic + ".voip")
        let noApp = answer([bearer, ("apns-topic", "com.example.nobody")])
        #expect(noApp?.status == 400 && reason(noApp) == "BadTopic")
    }

    @Test("a refusal carries the client's apns-id; an expired token is ExpiredProviderToken")
    func refusals() {
        context.replaceProxyCredentials(Self.credentials(certificateApps: [], tokenApps: ["beta"]))
        let id = "EABEAE54-14A8-11E5-B60B-1697F925EC7B"
        let expired = answer([("apns-topic", Self.betaTopic), ("apns-id", id),
                              ("authorization", Self.providerToken(iat: Self.now - 3601))])
        #expect(expired?.status == 403 && reason(expired) == "ExpiredProviderToken")
        #expect(expired?.headers.first { $0.name == "apns-id" }?.value == id)
        #expect(sender.sent.isEmpty)
    }
}
