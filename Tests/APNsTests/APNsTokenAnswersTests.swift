import Glibc
import RelayCore
import Locking
import Testing
import TestSupport
import TLS
import APNsEmulator
@testable import APNs
@testable import HTTP2Client

/// The pool against the emulator's answers about provider tokens
/// (403 UnrelatedKeyIdInToken, 429 TooManyProviderTokenUpdates): what
/// `HTTP2PoolMachine` decides, carried out over real connections.
@Suite("APNs token answers against the emulator", .serialized)
struct APNsTokenAnswersTests {
    static func provider(issuedAt: Int) throws -> APNsTokenProvider {
        let signer = try ES256Signer(pkcs8File: Fixtures.path(TestCertificates.authKeyP8))
        return try APNsTokenProvider(signer: signer, keyID: Fixtures.keyID, teamID: Fixtures.teamID, now: issuedAt)
    }

    /// A client whose wall clock is the real one plus `offset` seconds.
    static func client(_ emulator: APNsEmulator, _ provider: APNsTokenProvider,
                       offset: Locked<Int> = Locked(0)) throws -> LoopClient {
        var configuration = Fixtures.configuration(
            port: emulator.port, context: try Fixtures.tlsContext(identity: nil), tokenProvider: provider)
        configuration.wallClock = { Int(time(nil)) + offset.withLock { $0 } }
        return try LoopClient(configuration)
    }

    static func bearers(_ emulator: APNsEmulator) -> [String?] {
        emulator.receivedNotifications().map { record in record.headers.first { $0.name == "authorization" }?.value }
    }

    @Test("403 UnrelatedKeyIdInToken: the push goes again on a new connection and is accepted; the one answered so takes no more")
    func unrelatedKeyOpensAnotherConnection() throws {
        let emulator = try Fixtures.tokenEmulator(
            record: true, behavior: APNsEmulatorBehavior(forcedAction: .reject(.unrelatedKeyIdInToken), forcedCount: 1))
        defer { emulator.stop() }
        let client = try Self.client(emulator, try Self.provider(issuedAt: Int(time(nil))))
        let first = try Fixtures.notification(token: Fixtures.deviceToken(1))
        #expect(try client.send([first]).outcomes == [.apns(status: 200, reason: nil, apnsID: first.apnsID)])
        #expect(emulator.statistics.received == 2)
        #expect(emulator.rejectedCount == 1)
        #expect(emulator.connectionCount == 2)
        // The next push goes to the new connection: the first drained.
        let second = try Fixtures.notification(token: Fixtures.deviceToken(2))
        #expect(try client.send([second]).outcomes == [.apns(status: 200, reason: nil, apnsID: second.apnsID)])
        let records = emulator.receivedNotifications()
        #expect(records.map(\.apnsID) == [first.apnsID, second.apnsID])
        #expect(Set(records.map(\.connectionID)).count == 1)
        #expect(emulator.connectionCount == 2)
        let status = client.status
        #expect(status.counters.connectionsOpened == 2)
        #expect(status.connections[.ready] == 1)
        // The 403 was mended, never a completion: one per send, both 200.
        #expect(status.counters.sent == 2 && status.counters.completed == 2)
    }

    @Test("429 TooManyProviderTokenUpdates on a renewed token: the push goes again with the token before it and is accepted")
    func refusedRenewalFallsBack() throws {
        let emulator = try Fixtures.tokenEmulator(record: true, tokenUpdateInterval: 1200)
        defer { emulator.stop() }
        // A token 49 m 50 s old: the next renewal is 10 s away.
        let issued = Int(time(nil)) - APNsTokenProvider.renewalAge + 10
        let provider = try Self.provider(issuedAt: issued)
        let offset = Locked(0)
        let client = try Self.client(emulator, provider, offset: offset)
        let first = try Fixtures.notification(token: Fixtures.deviceToken(1))
        #expect(try client.send([first]).outcomes == [.apns(status: 200, reason: nil, apnsID: first.apnsID)])
        let before = "bearer " + provider.token(now: issued)
        // 20 s later by the client's clock: the token is renewed, and APNs
        // has seen a new token of this key less than 20 minutes ago.
        offset.withLock { $0 = 20 }
        let second = try Fixtures.notification(token: Fixtures.deviceToken(2))
        #expect(try client.send([second]).outcomes == [.apns(status: 200, reason: nil, apnsID: second.apnsID)])
        #expect(emulator.statistics.received == 3)
        #expect(emulator.rejectedCount == 1)
        #expect(Self.bearers(emulator) == [before, before])
        // The provider went back to the token before and holds renewals.
        #expect(provider.issuedAt == issued)
        #expect(emulator.connectionCount == 1)
    }

    @Test("429 TooManyProviderTokenUpdates with no token to go back to: sent again once, then that answer (503 to a sender)")
    func refusedWithoutPrevious() throws {
        let emulator = try Fixtures.tokenEmulator(record: true, tokenUpdateInterval: 1200)
        defer { emulator.stop() }
        let now = Int(time(nil))
        // Another signer of the key (another instance) made APNs take its token.
        let other = try Self.client(emulator, try Self.provider(issuedAt: now - 60))
        let taken = try Fixtures.notification(token: Fixtures.deviceToken(1))
        #expect(try other.send([taken]).outcomes == [.apns(status: 200, reason: nil, apnsID: taken.apnsID)])
        // This process starts with a token of its own: an update too many.
        let provider = try Self.provider(issuedAt: now)
        let client = try Self.client(emulator, provider)
        let refused = try Fixtures.notification(token: Fixtures.deviceToken(2))
        let delivery = try client.send([refused]).deliveries[0]
        #expect(delivery.outcome == .apns(status: 429, reason: .tooManyProviderTokenUpdates, apnsID: refused.apnsID))
        #expect(relayResponse(for: delivery.outcome, notification: refused.apnsID, ttl: 60).status == 503)
        #expect(emulator.statistics.received == 3)
        #expect(emulator.rejectedCount == 2)
        // The refused token stays: APNs takes it once its 20 minutes are over.
        #expect(provider.issuedAt == now)
    }
}
