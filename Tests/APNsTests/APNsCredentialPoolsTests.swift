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

/// Several credentials in one client: a pool per credential and
/// environment, opened by the first push, closed when idle or retired.
@Suite("APNs client with several credentials", .serialized)
struct APNsCredentialPoolsTests {
    static let second = CredentialID(7)

    /// A client with two certificate credentials (the test CA's client
    /// certificate from two PKCS#12 files), made lazily by the catalog.
    static func client(_ emulator: APNsEmulator,
                       _ adjust: (inout APNsClientConfiguration) -> Void = { _ in }) throws -> (LoopClient, APNsCredentialCatalog) {
        let catalog = APNsCredentialCatalog(caFile: try TestCertificates.path(TestCertificates.caCertificate))
        catalog.add(.primary, .certificate(try Fixtures.clientIdentity()))
        catalog.add(second, .certificate(try TLSIdentity.pkcs12(
            file: TestCertificates.path(TestCertificates.clientP12WithoutPassword), password: "")))
        let host = HostAndPort(host: "127.0.0.1", port: emulator.port)
        var settings = APNsSettings()
        settings.productionHost = host
        settings.developmentHost = host
        var configuration = APNsClientConfiguration(settings, credentials: catalog)
        configuration.settings.backoffBase = .milliseconds(50)
        configuration.settings.backoffCap = .milliseconds(200)
        adjust(&configuration)
        return (try LoopClient(configuration), catalog)
    }

    static func notification(_ index: Int, credential: CredentialID,
                             environment: APNsEnvironment = .development) throws -> APNsNotification {
        var notification = try Fixtures.notification(token: Fixtures.deviceToken(index), environment: environment)
        notification.credential = credential
        return notification
    }

    @Test("each credential and environment gets its own pool, opened by its first push")
    func poolPerCredential() throws {
        let emulator = try Fixtures.certificateEmulator(record: true)
        defer { emulator.stop() }
        let (client, _) = try Self.client(emulator)
        // No pool yet: nothing connects before the first push.
        #expect(client.status.connections.isEmpty)
        #expect(emulator.statistics.connections == 0)
        let sent = [
            try Self.notification(1, credential: .primary), try Self.notification(2, credential: Self.second),
            try Self.notification(3, credential: Self.second, environment: .production),
        ]
        let results = try client.send(sent)
        #expect(results.outcomes == sent.map { .apns(status: 200, reason: nil, apnsID: $0.apnsID) })
        // Three pools: a connection each, every one still open.
        #expect(client.status.connections == [.ready: 3])
        #expect(emulator.statistics.connections == 3)
        #expect(emulator.acceptedCount == 3)
        #expect(client.shutdown())
    }

    @Test("a credential the catalog does not hold fails its push without touching APNs")
    func unknownCredential() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let (client, _) = try Self.client(emulator)
        let results = try client.send([try Self.notification(1, credential: CredentialID(99))])
        #expect(results.outcomes == [.allConnectionsDown])
        #expect(results.reentrantCompletions == 0)
        #expect(emulator.statistics.received == 0)
        // No pool opened for it: no connection either.
        #expect(emulator.statistics.connections == 0)
        #expect(client.status.connections.isEmpty)
    }

    @Test("an idle pool closes its connections after the idle timeout; the next push opens them again")
    func idlePoolsClose() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let (client, _) = try Self.client(emulator) {
            $0.settings.idleTimeout = .milliseconds(300)
            $0.settings.idleSweepInterval = .milliseconds(100)
        }
        _ = try client.send([try Self.notification(1, credential: .primary)])
        #expect(client.status.connections == [.ready: 1])
        #expect(eventually { client.status.connections.isEmpty })
        #expect(eventually { emulator.statistics.openConnections == 0 })
        let again = try Self.notification(2, credential: .primary)
        #expect(try client.send([again]).outcomes == [.apns(status: 200, reason: nil, apnsID: again.apnsID)])
        #expect(client.status.counters.completed == 2)
        #expect(client.shutdown())
    }

    @Test("a retired credential's pool finishes what it carries, then closes; the others stay")
    func retiredPoolsClose() throws {
        let emulator = try Fixtures.certificateEmulator(behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(400)))
        defer { emulator.stop() }
        let (client, catalog) = try Self.client(emulator) { $0.settings.idleSweepInterval = .milliseconds(100) }
        _ = try client.send([try Self.notification(1, credential: .primary), try Self.notification(2, credential: Self.second)])
        // A push in flight on the credential that is about to be retired.
        let slow = try Self.notification(3, credential: Self.second)
        let outcome = Locked<DeliveryOutcome?>(nil)
        client.onLoop { apns in apns.send(slow) { result in outcome.withLock { $0 = result.outcome } } }
        catalog.remove(Self.second)
        usleep(200_000)  // two sweeps while the push is in flight
        #expect(client.status.connections == [.ready: 2], "a pool with a push in flight stays")
        #expect(eventually { outcome.withLock { $0 } != nil })
        #expect(outcome.withLock { $0 } == .apns(status: 200, reason: nil, apnsID: slow.apnsID))
        #expect(eventually { client.status.connections == [.ready: 1] })
        // The primary's pool stays: its next push takes its open connection.
        let opened = emulator.statistics.connections
        let next = try Self.notification(4, credential: .primary)
        #expect(try client.send([next]).outcomes == [.apns(status: 200, reason: nil, apnsID: next.apnsID)])
        #expect(emulator.statistics.connections == opened)
        #expect(client.shutdown())
    }
}
