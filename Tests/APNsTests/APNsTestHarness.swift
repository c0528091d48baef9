import APNsCore
import Dispatch
import Foundation
import EventLoop
import Glibc
import Locking
import Testing
import RelayCore
import TestSupport
import TLS
import APNsEmulator
@testable import APNs
@testable import HTTP2Client

/// Shared by the APNs integration tests: emulators, client contexts,
/// notifications, and a client on its own loop thread.
enum Fixtures {
    static func path(_ name: String) throws -> String { try TestCertificates.path(name) }

    /// A certificate-auth emulator (CA-signed client certificates required).
    static func certificateEmulator(behavior: APNsEmulatorBehavior = APNsEmulatorBehavior(),
                                    record: Bool = false,
                                    environment: APNsEnvironment = .production) throws -> APNsEmulator {
        let emulator = try APNsEmulator(configuration: APNsEmulatorConfiguration(
            certificateFile: path(TestCertificates.serverCertificate), privateKeyFile: path(TestCertificates.serverKey),
            authentication: .clientCertificate(caFile: path(TestCertificates.caCertificate)), environment: environment,
            expectedTopic: TestCertificates.bundleID, recordNotifications: record, behavior: behavior))
        try emulator.start()
        return emulator
    }

    static let keyID = "KEYID12345"
    static let teamID = "TEAMID6789"

    /// A token-auth emulator for the test key; `tokenUpdateInterval` as
    /// `APNsEmulatorConfiguration` has it (0: not enforced).
    static func tokenEmulator(record: Bool = false, behavior: APNsEmulatorBehavior = APNsEmulatorBehavior(),
                              tokenUpdateInterval: Int = 0) throws -> APNsEmulator {
        let emulator = try APNsEmulator(configuration: APNsEmulatorConfiguration(
            certificateFile: path(TestCertificates.serverCertificate), privateKeyFile: path(TestCertificates.serverKey),
            authentication: .token(publicKeyPEM: TestCertificates.bytes(TestCertificates.authKeyPublic),
                                   keyID: keyID, teamID: teamID),
            expectedTopic: TestCertificates.bundleID, recordNotifications: record, behavior: behavior,
            tokenUpdateInterval: tokenUpdateInterval))
        try emulator.start()
        return emulator
    }

    static func clientIdentity() throws -> TLSIdentity {
        try TLSIdentity.pkcs12(file: path(TestCertificates.clientP12), password: TestCertificates.p12Password)
    }

    /// Trusts the test CA, presents `identity`, offers h2.
    static func tlsContext(identity: TLSIdentity?, roots: String = TestCertificates.caCertificate) throws -> TLSContext {
        try TLSContext.client(trustedRootsFile: path(roots), identity: identity, alpn: ["h2"])
    }

    static func configuration(port: UInt16, context: TLSContext, tokenProvider: APNsTokenProvider? = nil,
                              host: String = "127.0.0.1") -> APNsClientConfiguration {
        var settings = APNsSettings()
        settings.productionHost = HostAndPort(host: host, port: port)
        settings.developmentHost = settings.productionHost
        var configuration = APNsClientConfiguration(
            settings, credentials: APNsCredentialCatalog(
                primary: APNsEndpointCredential(tlsContext: context, tokenProvider: tokenProvider)))
        configuration.settings.connectTimeout = .seconds(5)
        configuration.settings.answerTimeout = .seconds(10)
        configuration.settings.backoffBase = .milliseconds(50)
        configuration.settings.backoffCap = .milliseconds(200)
        return configuration
    }

    /// 64 hex digits, distinct per `index`.
    static func deviceToken(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return "ab" + String(repeating: "0", count: 62 - hex.count) + hex
    }

    static func apnsID() -> String {
        var random = SystemRandomNumberGenerator()
        return makeAPNsID(random: &random)
    }

    static func notification(token: String, topic: String = TestCertificates.bundleID,
                             environment: APNsEnvironment = .development) throws -> APNsNotification {
        try makeNotification(
            target: RelayTarget(environment: environment, deviceToken: token, extra: nil),
            message: WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 0x42, count: 120), ttl: 3600),
            topic: topic, credential: .primary, apnsID: apnsID(), now: Int(time(nil))).notification
    }

    static func notifications(count: Int, first: Int = 0) throws -> [APNsNotification] {
        try (first..<(first + count)).map { try notification(token: deviceToken($0)) }
    }
}

/// What one `HTTP2Connection` reports to its owner, recorded on its loop
/// thread: for tests that drive a connection by hand, without a pool.
final class RecordingOwner: HTTP2ConnectionOwner {
    var capacityReports = 0
    var drainingReports = 0
    var pingsSent = 0
    var finished: [(request: PooledNotification, delivery: APNsDelivery)] = []
    var returned: [PooledNotification] = []
    var closes: [(failure: ConnectionFailure?, wasReady: Bool)] = []

    func connectionHasCapacity(_ connection: HTTP2Connection) { capacityReports += 1 }
    func connectionIsDraining(_ connection: HTTP2Connection) { drainingReports += 1 }
    func connectionSentPing(_ connection: HTTP2Connection) { pingsSent += 1 }

    /// Recorded as the sender reads it.
    func connection(_ connection: HTTP2Connection, finished request: PooledRequest, with answer: PooledAnswer) {
        let notification = request as! PooledNotification
        finished.append((notification, notification.delivery(answer)))
    }

    func connection(_ connection: HTTP2Connection, returnedUnprocessed requests: [PooledRequest]) {
        returned += requests.map { $0 as! PooledNotification }
    }

    func connectionDidClose(_ connection: HTTP2Connection, failure: ConnectionFailure?, wasReady: Bool) {
        closes.append((failure, wasReady))
    }
}

extension Fixtures {
    /// The emulator's address, with the test CA's client certificate.
    static func endpoint(port: UInt16) throws -> HTTP2Endpoint {
        HTTP2Endpoint(host: "127.0.0.1", port: port, authority: "127.0.0.1:\(port)",
                      tlsContext: try tlsContext(identity: clientIdentity()), authorizer: nil,
                      connectTimeout: .seconds(5), pingInterval: .seconds(60), pingTimeout: .seconds(5))
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
}

/// What a batch of sends produced, checked for the NotificationSender contract.
struct SendResults {
    var deliveries: [APNsDelivery]
    /// Completions per send (must all be 1).
    var completionCounts: [Int]
    /// Completions that ran inside `send` (must be 0).
    var reentrantCompletions: Int

    var outcomes: [DeliveryOutcome] { deliveries.map(\.outcome) }
}

/// An `APNsClient` on a loop thread of its own; blocking helpers for tests.
final class LoopClient: @unchecked Sendable {
    let thread: EventLoopThread
    /// Touched only on the loop thread (created before it is used there).
    let client: APNsClient

    init(_ configuration: APNsClientConfiguration) throws {
        thread = try EventLoopThread(name: "apns-test")
        client = APNsClient(loop: thread.loop, configuration: configuration)
    }

    /// Runs `body` on the loop thread and returns its result.
    func onLoop<T>(_ body: @escaping (APNsClient) -> T) -> T {
        let client = client
        return thread.loop.runAndWait { body(client) }
    }

    /// Sends all, waits (at most `timeout` seconds) until every completion
    /// ran, and reports exactly-once and non-reentrancy.
    func send(_ notifications: [APNsNotification], timeout: Double = 30) throws -> SendResults {
        try start(notifications).wait(timeout: timeout)
    }

    /// Queues the sends on the loop and returns at once: the loop runs them
    /// after whatever it was handed before.
    func start(_ notifications: [APNsNotification]) -> PendingSends {
        let pending = PendingSends(count: notifications.count)
        let client = UnsafeTransfer(self.client)
        let batch = notifications
        thread.loop.execute {
            var insideSend = false
            let flag = UnsafeTransfer({ insideSend })
            for (index, notification) in batch.enumerated() {
                insideSend = true
                client.value.send(notification, completion: { delivery in
                    pending.complete(index, delivery, reentrant: flag.value())
                })
                insideSend = false
            }
        }
        return pending
    }

    /// Sends each as Apple's request passed on (`sendProxied`), one after
    /// another, and waits (at most `timeout` seconds per send): each one's
    /// delivery and `apns-unique-id`.
    func sendProxied(_ notifications: [APNsNotification], timeout: Double = 30) throws
        -> [(delivery: APNsDelivery, uniqueID: String?)] {
        try notifications.map { notification in
            let answer = Locked<(delivery: APNsDelivery, uniqueID: String?)?>(nil)
            let done = DispatchSemaphore(value: 0)
            let client = UnsafeTransfer(self.client)
            thread.loop.execute {
                client.value.sendProxied(notification) { delivery, uniqueID in
                    answer.withLock { $0 = (delivery, uniqueID) }
                    done.signal()
                }
            }
            guard done.wait(timeout: .now() + timeout) == .success, let answered = answer.withLock({ $0 }) else {
                throw HarnessError(description: "a proxied send did not complete within \(timeout) s")
            }
            return answered
        }
    }

    /// Graceful client shutdown, waited for (bounded).
    func shutdown(timeout: Double = 15) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let client = UnsafeTransfer(self.client)
        thread.loop.execute { client.value.shutdown { done.signal() } }
        return done.wait(timeout: .now() + timeout) == .success
    }

    var status: APNsClientStatus { onLoop { $0.status } }

    deinit {
        thread.stopAndJoin()
    }
}

/// Sends queued by `LoopClient.start`, their completions as they come.
final class PendingSends: Sendable {
    private let state: Locked<SendResults>
    private let remaining: Locked<Int>
    private let done = DispatchSemaphore(value: 0)
    let count: Int

    init(count: Int) {
        self.count = count
        state = Locked(SendResults(
            deliveries: Array(repeating: APNsDelivery(outcome: .overloaded), count: count),
            completionCounts: Array(repeating: 0, count: count), reentrantCompletions: 0))
        remaining = Locked(count)
    }

    func complete(_ index: Int, _ delivery: APNsDelivery, reentrant: Bool) {
        state.withLock { results in
            results.completionCounts[index] += 1
            results.deliveries[index] = delivery
            if reentrant { results.reentrantCompletions += 1 }
        }
        let left = remaining.withLock { count in
            count -= 1
            return count
        }
        if left == 0 { done.signal() }
    }

    /// Waits (at most `timeout` seconds) until every completion ran, and
    /// reports exactly-once and non-reentrancy.
    func wait(timeout: Double = 30) throws -> SendResults {
        if done.wait(timeout: .now() + timeout) == .timedOut {
            let left = remaining.withLock { $0 }
            throw HarnessError(description: "\(left) of \(count) sends did not complete within \(timeout) s")
        }
        // Give a duplicate completion (a bug) a moment to show up.
        usleep(20_000)
        let results = state.withLock { $0 }
        // The NotificationSender contract, checked on every batch.
        if let index = results.completionCounts.firstIndex(where: { $0 != 1 }) {
            Issue.record("send \(index) completed \(results.completionCounts[index]) times")
        }
        if results.reentrantCompletions > 0 {
            Issue.record("\(results.reentrantCompletions) completions ran inside send")
        }
        return results
    }
}


final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

extension DeliveryOutcome {
    /// APNs answered 200: the notification was delivered.
    var isAccepted: Bool {
        if case .apns(200, nil, _) = self { return true }
        return false
    }
}
