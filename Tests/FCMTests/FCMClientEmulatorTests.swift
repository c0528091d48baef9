import APNsEmulator
import EventLoop
import FCMCore
import HTTP2Client
import JSON
import Locking
import TestSupport
import TLS
import Testing
@testable import FCM

/// The FCM client against the emulator's FCM HTTP v1 (token endpoint and
/// messages:send on one listener): access tokens fetched through the
/// client's own pools, messages sent with them, a stale one refreshed once.
@Suite("FCM client against the emulator", .serialized)
struct FCMClientEmulatorTests {
    static let registrationToken = "cXyzAbc123:APA91bHunt3rXyz-_0123456789"

    /// The test service account, its token endpoint the emulator on `port`.
    static func account(port: UInt16) throws -> FCMServiceAccount {
        let pem = String(decoding: try TestCertificates.bytes(TestCertificates.serviceAccountKeyP8), as: UTF8.self)
        var text: [UInt8] = []
        appendJSONObject([
            ("type", .string("service_account")), ("project_id", .string("toot-relay-test")),
            ("private_key_id", .string("0123456789abcdef0123456789abcdef01234567")), ("private_key", .string(pem)),
            ("client_email", .string("firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com")),
            ("token_uri", .string("https://127.0.0.1:\(port)/token")),
        ], to: &text)
        return try FCMServiceAccount(json: text)
    }

    /// An emulator on a port chosen first (the account's token URI names it).
    static func emulator() throws -> (APNsEmulator, FCMServiceAccount) {
        let probe = try TCPTestServer(name: "port probe")
        let port = probe.port
        probe.stop()
        let account = try account(port: port)
        let emulator = try APNsEmulator(configuration: APNsEmulatorConfiguration(
            port: port, certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
            privateKeyFile: TestCertificates.path(TestCertificates.serverKey), authentication: .none,
            fcm: FCMEmulatorConfiguration(serviceAccounts: [account], recordMessages: true)))
        try emulator.start()
        return (emulator, account)
    }

    static func message(_ account: FCMServiceAccount) -> FCMNotification {
        let body = #"{"message":{"token":"\#(registrationToken)","data":{"p":"x"}}}"#
        return FCMNotification(account: account, token: FCMToken(registrationToken)!, body: Array(body.utf8))
    }

    /// A client and the access tokens it fetches through, on `loop`.
    static func client(on loop: EventLoop, port: UInt16) throws -> (FCMClient, FCMAccessTokens) {
        var settings = FCMSettings()
        settings.host = "127.0.0.1"
        settings.port = port
        let context = try TLSContext.client(trustedRootsFile: TestCertificates.path(TestCertificates.caCertificate),
                                            identity: nil, alpn: ["h2"])
        let client = FCMClient(loop: loop, settings: settings, tlsContext: context)
        let tokens = FCMAccessTokens(loop: loop, fetch: { [unowned client] in client.fetchToken($0, $1, $2) })
        client.accessTokens = tokens
        return (client, tokens)
    }

    @Test("a message goes with an access token fetched through the client's pool, and FCM's 200 is delivered")
    func delivered() throws {
        let (emulator, account) = try Self.emulator()
        defer { emulator.stop() }
        let thread = try EventLoopThread(name: "fcm-test")
        let delivered = Locked<[FCMDelivery]>([])
        let (client, tokens) = thread.loop.runAndWait { () -> (FCMClient, FCMAccessTokens) in
            let (client, tokens) = try! Self.client(on: thread.loop, port: emulator.port)
            client.send(Self.message(account)) { delivery in delivered.withLock { $0.append(delivery) } }
            return (client, tokens)
        }
        defer { withExtendedLifetime(tokens) { thread.stopAndJoin(after: client) } }
        #expect(eventually(timeout: .seconds(10)) { delivered.withLock { $0.count } == 1 })
        let delivery = delivered.withLock { $0.first }
        #expect(delivery?.verdict == .delivered, "\(String(describing: delivery))")
        #expect(emulator.receivedFCMMessages().count == 1)
    }

    /// The first ask gives a token FCM does not know; the rest are the real source's.
    final class StaleFirst: FCMAccessTokenSource {
        let tokens: FCMAccessTokens
        var staleGiven = false
        var rejected: [String] = []

        init(_ tokens: FCMAccessTokens) {
            self.tokens = tokens
        }

        func token(for account: FCMServiceAccount) -> FCMAccessTokenResult? {
            guard staleGiven else {
                staleGiven = true
                return .token("ya29.stale")
            }
            return tokens.token(for: account)
        }

        func awaitToken(for account: FCMServiceAccount, _ completion: @escaping (FCMAccessTokenResult) -> Void) {
            tokens.awaitToken(for: account, completion)
        }

        func rejected(token: String, for account: FCMServiceAccount) {
            rejected.append(token)
            tokens.rejected(token: token, for: account)
        }
    }

    @Test("FCM refuses a stale access token: the client drops it and sends once more with a fresh one")
    func staleTokenRefreshed() throws {
        let (emulator, account) = try Self.emulator()
        defer { emulator.stop() }
        let thread = try EventLoopThread(name: "fcm-test")
        let delivered = Locked<[FCMDelivery]>([])
        let (client, source) = thread.loop.runAndWait { () -> (FCMClient, StaleFirst) in
            let (client, tokens) = try! Self.client(on: thread.loop, port: emulator.port)
            let source = StaleFirst(tokens)
            client.accessTokens = source
            client.send(Self.message(account)) { delivery in delivered.withLock { $0.append(delivery) } }
            return (client, source)
        }
        defer { thread.stopAndJoin(after: client) }
        #expect(eventually(timeout: .seconds(10)) { delivered.withLock { $0.count } == 1 })
        let delivery = delivered.withLock { $0.first }
        #expect(delivery?.verdict == .delivered, "\(String(describing: delivery))")
        guard case .answered(_, _, afterTokenRefresh: true)? = delivery?.outcome else {
            Issue.record("not after a refresh: \(String(describing: delivery))")
            return
        }
        #expect(thread.loop.runAndWait { source.rejected } == ["ya29.stale"])
        #expect(emulator.receivedFCMMessages().count == 1)
    }
}
