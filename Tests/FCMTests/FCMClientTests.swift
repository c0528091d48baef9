import EventLoop
import FCMCore
import Glibc
import HTTP2Client
import Locking
import TestSupport
import TLS
import Testing
@testable import FCM

/// The service account the tests send with; the key is a PEM block of the
/// right shape (nothing here signs).
let testAccount = FCMServiceAccount(
    projectID: "toot-relay-test", privateKeyID: "0123456789abcdef0123456789abcdef01234567",
    privateKey: try! ServiceAccountPrivateKey(pemText: """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDSecretKeyMaterialA
        -----END PRIVATE KEY-----

        """),
    clientEmail: "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com",
    tokenEndpoint: .google)

/// An access token source that answers from a list and records what it was told.
final class ListedTokens: FCMAccessTokenSource {
    /// Handed out in turn; past the end, the send ends with `exhausted`.
    var tokens: [String]
    var asks = 0
    var rejected: [String] = []
    static let exhausted = FCMOutcome.noAccessToken(.failed(detail: "no token left"))

    init(_ tokens: [String]) {
        self.tokens = tokens
    }

    func token(for account: FCMServiceAccount) -> FCMAccessTokenResult? {
        asks += 1
        return tokens.isEmpty ? .unavailable(Self.exhausted) : .token(tokens.removeFirst())
    }

    func awaitToken(for account: FCMServiceAccount, _ completion: @escaping (FCMAccessTokenResult) -> Void) {
        Issue.record("a listed token is never awaited")
    }

    func rejected(token: String, for account: FCMServiceAccount) {
        rejected.append(token)
    }
}

@Suite("FCM client")
struct FCMClientTests {
    static let notification = FCMNotification(
        account: testAccount, token: FCMToken("abc:def")!, body: Array(#"{"message":{}}"#.utf8))

    /// A port on 127.0.0.1 that nothing listens on.
    static func closedPort() throws -> UInt16 {
        let server = try TCPTestServer(name: "closed port")
        let port = server.port
        server.stop()
        return port
    }

    static func client(on loop: EventLoop, port: UInt16) throws -> FCMClient {
        var settings = FCMSettings()
        settings.host = "127.0.0.1"
        settings.port = port
        let context = try TLSContext.client(trustedRootsFile: TestCertificates.path(TestCertificates.caCertificate),
                                            identity: nil, alpn: ["h2"])
        return FCMClient(loop: loop, settings: settings, tlsContext: context)
    }

    @Test("a 401 or 403 a stale token may cause: the token is dropped and the message goes once more with a fresh one", arguments: [401, 403])
    func refreshOnce(status: Int) throws {
        let thread = try EventLoopThread(name: "fcm-test")
        let tokens = ListedTokens(["first"])
        let delivered = Locked<[FCMDelivery]>([])
        let client = thread.loop.runAndWait { () -> FCMClient in
            let client = try! Self.client(on: thread.loop, port: 9)
            client.accessTokens = tokens
            let message = PooledFCMMessage(Self.notification, accessToken: "stale", afterTokenRefresh: false,
                                           client: client) { delivery in delivered.withLock { $0.append(delivery) } }
            message.status = status
            message.body = Array(#"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#.utf8)
            client.finished(message, .answered(status: status))
            return client
        }
        defer { thread.stopAndJoin(after: client) }
        // The fresh token went out (to a port nothing answers on here).
        #expect(thread.loop.runAndWait { (tokens.rejected, tokens.asks, tokens.tokens) } == (["stale"], 1, []))
    }

    @Test("a second refusal after a fresh token is the sender's answer")
    func secondRefusalIsTheAnswer() throws {
        let thread = try EventLoopThread(name: "fcm-test")
        let tokens = ListedTokens([])
        let delivered = Locked<[FCMDelivery]>([])
        let client = thread.loop.runAndWait { () -> FCMClient in
            let client = try! Self.client(on: thread.loop, port: 9)
            client.accessTokens = tokens
            let message = PooledFCMMessage(Self.notification, accessToken: "fresh", afterTokenRefresh: true,
                                           client: client) { delivery in delivered.withLock { $0.append(delivery) } }
            message.status = 401
            message.body = Array(#"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#.utf8)
            client.finished(message, .answered(status: 401))
            return client
        }
        defer { thread.stopAndJoin(after: client) }
        let deliveries = delivered.withLock { $0 }
        #expect(deliveries.count == 1)
        #expect(deliveries.first?.verdict.webPushStatus == 502)
        #expect(thread.loop.runAndWait { (tokens.rejected, tokens.asks) } == ([], 0))
    }

    @Test("a send through the pool to an endpoint nothing listens on ends as a connect failure, after send returns")
    func connectFailure() throws {
        let port = try Self.closedPort()
        let thread = try EventLoopThread(name: "fcm-test")
        let delivered = Locked<[FCMDelivery]>([])
        let (client, insideSend) = thread.loop.runAndWait { () -> (FCMClient, Int) in
            let client = try! Self.client(on: thread.loop, port: port)
            client.accessTokens = ListedTokens(["token"])
            client.send(Self.notification) { delivery in delivered.withLock { $0.append(delivery) } }
            return (client, delivered.withLock { $0.count })
        }
        defer { thread.stopAndJoin(after: client) }
        #expect(insideSend == 0)
        #expect(eventually { delivered.withLock { $0.count } == 1 })
        guard case .connectFailed = delivered.withLock({ $0 }).first?.outcome else {
            Issue.record("got \(delivered.withLock { $0 })")
            return
        }
    }

    @Test("no access token: the send ends with the token source's outcome, after send returns")
    func noAccessToken() throws {
        let thread = try EventLoopThread(name: "fcm-test")
        let delivered = Locked<[FCMDelivery]>([])
        let (client, insideSend) = thread.loop.runAndWait { () -> (FCMClient, Int) in
            let client = try! Self.client(on: thread.loop, port: 9)
            client.accessTokens = ListedTokens([])
            client.send(Self.notification) { delivery in delivered.withLock { $0.append(delivery) } }
            return (client, delivered.withLock { $0.count })
        }
        defer { thread.stopAndJoin(after: client) }
        #expect(insideSend == 0)
        #expect(eventually { delivered.withLock { $0.count } == 1 })
        #expect(delivered.withLock { $0 }.first?.outcome == ListedTokens.exhausted)
    }

    @Test("a token request to an endpoint nothing listens on ends with one line, no part of the request")
    func tokenFetchFailure() throws {
        let port = try Self.closedPort()
        let thread = try EventLoopThread(name: "fcm-test")
        let replies = Locked<[TokenFetchResult]>([])
        let client = thread.loop.runAndWait { () -> FCMClient in
            let client = try! Self.client(on: thread.loop, port: 9)
            client.fetchToken(OAuthTokenEndpoint(host: "127.0.0.1", port: Int(port), target: "/token"),
                              Array("grant_type=x&assertion=secret".utf8)) { reply in
                replies.withLock { $0.append(reply) }
            }
            return client
        }
        defer { thread.stopAndJoin(after: client) }
        #expect(eventually { replies.withLock { $0.count } == 1 })
        guard case .failed(let words) = replies.withLock({ $0 }).first else {
            Issue.record("got \(replies.withLock { $0 })")
            return
        }
        #expect(words.hasPrefix("cannot connect: "))
        #expect(!words.contains("secret"))
    }

    @Test("a failure without an answer is the outcome of the same name", arguments: [
        (RequestFailure.answerTimedOut, FCMOutcome.answerTimedOut), (.connectFailed("x"), .connectFailed("x")),
        (.tlsFailed("y"), .tlsFailed("y")), (.streamFailed("z"), .streamFailed("z")),
        (.allConnectionsDown, .allConnectionsDown), (.overloaded, .overloaded),
    ])
    func failures(failure: RequestFailure, outcome: FCMOutcome) {
        #expect(failure.fcmOutcome == outcome)
    }
}
