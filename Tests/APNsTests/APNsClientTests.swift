import APNsCore
import Dispatch
import Glibc
import RelayCore
import Locking
import Testing
import TestSupport
import TLS
import APNsEmulator
@testable import APNs

@Suite("APNs client against the emulator", .serialized)
struct APNsClientTests {
    @Test("certificate auth: notifications are accepted, apns-id and topic arrive as sent")
    func certificateSuccess() throws {
        let emulator = try Fixtures.certificateEmulator(record: true)
        defer { emulator.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: emulator.port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity())))
        let notifications = try Fixtures.notifications(count: 5)
        let results = try client.send(notifications)
        #expect(results.completionCounts == Array(repeating: 1, count: 5))
        #expect(results.reentrantCompletions == 0)
        for (notification, outcome) in zip(notifications, results.outcomes) {
            #expect(outcome == .apns(status: 200, reason: nil, apnsID: notification.apnsID))
        }
        #expect(emulator.acceptedCount == 5)
        let received = emulator.receivedNotifications()
        #expect(Set(received.map(\.apnsID)) == Set(notifications.map(\.apnsID)))
        #expect(received.allSatisfy { $0.topic == TestCertificates.bundleID })
        #expect(client.status.connections[.ready] == 1)
        #expect(client.status.inFlight == 0)
        #expect(client.shutdown())
        #expect(client.status.connections.isEmpty)
    }

    @Test("token auth: the bearer JWT is accepted, one token for every request")
    func tokenSuccess() throws {
        let emulator = try Fixtures.tokenEmulator(record: true)
        defer { emulator.stop() }
        let signer = try ES256Signer(pkcs8File: Fixtures.path(TestCertificates.authKeyP8))
        let provider = try APNsTokenProvider(signer: signer, keyID: Fixtures.keyID, teamID: Fixtures.teamID,
                                             now: Int(time(nil)))
        let client = try LoopClient(Fixtures.configuration(
            port: emulator.port, context: Fixtures.tlsContext(identity: nil), tokenProvider: provider))
        let notifications = try Fixtures.notifications(count: 4)
        let results = try client.send(notifications)
        #expect(results.outcomes.allSatisfy { $0.isAccepted }, "\(results.outcomes)")
        #expect(emulator.acceptedCount == 4)
        let bearers = Set(emulator.receivedNotifications().compactMap { notification in
            notification.headers.first { $0.name == "authorization" }?.value
        })
        #expect(bearers == ["bearer " + provider.token(now: Int(time(nil)))])
    }

    @Test("403 ExpiredProviderToken renews a token at least 20 minutes old, once")
    func expiredProviderToken() throws {
        let emulator = try Fixtures.tokenEmulator()
        defer { emulator.stop() }
        let issued = Int(time(nil))
        let signer = try ES256Signer(pkcs8File: Fixtures.path(TestCertificates.authKeyP8))
        let provider = try APNsTokenProvider(signer: signer, keyID: Fixtures.keyID, teamID: Fixtures.teamID, now: issued)
        var configuration = Fixtures.configuration(
            port: emulator.port, context: try Fixtures.tlsContext(identity: nil), tokenProvider: provider)
        // The client's clock runs 25 minutes ahead: the token in use is old
        // enough to be replaced when APNs calls it expired.
        configuration.wallClock = { issued + 25 * 60 }
        let client = try LoopClient(configuration)
        let expired = try Fixtures.notification(token: APNsFaultToken.token(code: 0x08))
        let outcome = try client.send([expired]).outcomes[0]
        #expect(outcome == .apns(status: 403, reason: .expiredProviderToken, apnsID: expired.apnsID))
        #expect(provider.issuedAt == issued + 25 * 60)
    }

    @Test("the topic from the certificate UID is what APNs receives")
    func topicFromCertificate() throws {
        let configuration = try Configuration(environment: [
            "P12_FILENAME": Fixtures.path(TestCertificates.clientP12Legacy), "P12_PASSWORD": TestCertificates.p12Password,
            "CA_FILENAME": Fixtures.path(TestCertificates.caCertificate),
        ])
        // As the daemon does: the credential, its topic, a catalog holding it.
        let credential = try loadCredential(configuration.credentialSpec, now: Int(time(nil)))
        let topic = configuration.effectiveTopic(certificateUID: credential.certificateUID)
        #expect(topic == TestCertificates.bundleID)
        let emulator = try Fixtures.certificateEmulator(record: true)
        defer { emulator.stop() }
        let catalog = APNsCredentialCatalog(caFile: configuration.caFile)
        catalog.add(.primary, credential.authentication)
        var clientConfiguration = APNsClientConfiguration(APNsSettings(), credentials: catalog)
        clientConfiguration.settings.developmentHost = HostAndPort(host: "127.0.0.1", port: emulator.port)
        let client = try LoopClient(clientConfiguration)
        let notification = try Fixtures.notification(token: Fixtures.deviceToken(1), topic: topic)
        let results = try client.send([notification])
        #expect(results.outcomes == [.apns(status: 200, reason: nil, apnsID: notification.apnsID)])
        #expect(emulator.receivedNotifications().first?.topic == TestCertificates.bundleID)
    }

    /// Every rejection of the emulator's fault table comes back as the
    /// status and reason enum APNs sent; 410s carry the timestamp.
    @Test("every APNs status and reason surfaces as its enum value")
    func everyRejection() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: emulator.port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity())))
        var expected: [(status: Int, reason: APNsReason, retryAfter: Int?)] = []
        var notifications: [APNsNotification] = []
        for (code, action) in APNsFaultToken.table {
            switch action {
            case .reject(let status, let reason): expected.append((status, reason, nil))
            case .rejectRetryingAfter(let status, let reason, let seconds): expected.append((status, reason, seconds))
            case .noAnswer, .resetStream, .dropConnection: continue
            }
            notifications.append(try Fixtures.notification(token: APNsFaultToken.token(code: code)))
        }
        #expect(expected.contains { $0.retryAfter != nil }, "a row answers with Retry-After")
        #expect(expected.count >= 15)
        let results = try client.send(notifications)
        #expect(results.completionCounts.allSatisfy { $0 == 1 })
        for (index, delivery) in results.deliveries.enumerated() {
            let (status, reason, retryAfter) = expected[index]
            #expect(delivery.retryAfterSeconds == retryAfter, "\(reason)")
            guard case .apns(let gotStatus, let gotReason, _) = delivery.outcome else {
                Issue.record("\(reason): got \(delivery.outcome)")
                continue
            }
            #expect(gotStatus == status)
            #expect(gotReason == reason)
            #expect((delivery.unregisteredTimestamp != nil) == (status == 410), "\(reason)")
        }
        // A wrong topic is the APNs answer, not a transport error.
        let wrongTopic = try Fixtures.notification(token: Fixtures.deviceToken(7), topic: "org.example.not-ours")
        guard case .apns(400, let reason?, _) = try client.send([wrongTopic]).outcomes.first else {
            Issue.record("wrong topic was not a 400 with a reason")
            return
        }
        #expect(reason == .topicDisallowed || reason == .deviceTokenNotForTopic)
        // A 403 is the sender's to judge (credentialVerdict); the
        // connection carries on, and the next push is accepted.
        let forbidden = try Fixtures.notification(token: APNsFaultToken.token(code: 0x14))
        let refused = try client.send([forbidden]).outcomes[0]
        #expect(refused == .apns(status: 403, reason: .forbidden, apnsID: forbidden.apnsID))
        #expect(refused.credentialVerdict == .rejected)
        let accepted = try client.send(Fixtures.notifications(count: 1)).outcomes[0]
        #expect(accepted.credentialVerdict == .accepted)
        #expect(client.status.counters.connectionsLost == 0)
    }

    @Test("production and development go to their own hosts")
    func environments() throws {
        let production = try Fixtures.certificateEmulator()
        defer { production.stop() }
        let development = try Fixtures.certificateEmulator()
        defer { development.stop() }
        var configuration = Fixtures.configuration(
            port: production.port, context: try Fixtures.tlsContext(identity: Fixtures.clientIdentity()))
        configuration.settings.developmentHost = HostAndPort(host: "localhost", port: development.port)
        let client = try LoopClient(configuration)
        let notifications = [
            try Fixtures.notification(token: Fixtures.deviceToken(1), environment: .production),
            try Fixtures.notification(token: Fixtures.deviceToken(2), environment: .development),
            try Fixtures.notification(token: Fixtures.deviceToken(3), environment: .development),
        ]
        let results = try client.send(notifications)
        #expect(results.outcomes.allSatisfy { $0.isAccepted })
        #expect(production.acceptedCount == 1)
        #expect(development.acceptedCount == 2)
        #expect(client.status.connections[.ready] == 2)
    }

    @Test("after shutdown, sends fail at once as all connections down")
    func shutdown() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: emulator.port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity())))
        _ = try client.send(Fixtures.notifications(count: 2))
        emulator.update { $0.responseDelay = .milliseconds(300) }
        // In-flight requests finish during a graceful shutdown.
        let results = Locked<[DeliveryOutcome]>([])
        let notifications = try Fixtures.notifications(count: 3, first: 10)
        let shutDown = Locked(false)
        client.onLoop { client in
            for notification in notifications {
                client.send(notification) { delivery in results.withLock { $0.append(delivery.outcome) } }
            }
            client.shutdown { shutDown.withLock { $0 = true } }
        }
        #expect(eventually(timeout: .seconds(10)) { shutDown.withLock { $0 } })
        #expect(results.withLock { $0 }.count == 3)
        #expect(results.withLock { $0 }.allSatisfy { $0.isAccepted })
        #expect(try client.send([Fixtures.notification(token: Fixtures.deviceToken(99))]).outcomes == [.allConnectionsDown])
        #expect(client.status.connections.isEmpty)
    }
}
