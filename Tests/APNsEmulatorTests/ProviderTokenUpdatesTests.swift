import Glibc
import Testing
import TestSupport
@testable import APNsEmulator

/// APNs' limit on new provider tokens (429 TooManyProviderTokenUpdates), as
/// the emulator enforces it when asked (`tokenUpdateInterval`).
@Suite("Provider token updates", .timeLimit(.minutes(1)))
struct ProviderTokenUpdatesTests {
    /// One token presented: (key id, iat, now), and whether it is taken.
    struct Presentation: Sendable {
        var keyID: String
        var issuedAt: Int
        var now: Int
        var taken: Bool
    }

    static let start = 1_800_000_000

    static let cases: [(String, [Presentation])] = [
        ("the first token of a key is taken", [
            Presentation(keyID: "A", issuedAt: start, now: start, taken: true),
        ]),
        ("the same token again is taken at any time", [
            Presentation(keyID: "A", issuedAt: start, now: start, taken: true),
            Presentation(keyID: "A", issuedAt: start, now: start + 1, taken: true),
            Presentation(keyID: "A", issuedAt: start, now: start + 1199, taken: true),
        ]),
        ("a new token one second before the interval is refused, at the interval taken", [
            Presentation(keyID: "A", issuedAt: start, now: start, taken: true),
            Presentation(keyID: "A", issuedAt: start + 60, now: start + 1199, taken: false),
            Presentation(keyID: "A", issuedAt: start + 60, now: start + 1200, taken: true),
        ]),
        ("a refused token is not counted: the interval runs from the last token taken", [
            Presentation(keyID: "A", issuedAt: start, now: start, taken: true),
            Presentation(keyID: "A", issuedAt: start + 600, now: start + 600, taken: false),
            Presentation(keyID: "A", issuedAt: start + 700, now: start + 1200, taken: true),
            Presentation(keyID: "A", issuedAt: start + 600, now: start + 1300, taken: false),
        ]),
        ("the token before a new one stays good after it", [
            Presentation(keyID: "A", issuedAt: start, now: start, taken: true),
            Presentation(keyID: "A", issuedAt: start + 1200, now: start + 1200, taken: true),
            Presentation(keyID: "A", issuedAt: start, now: start + 1300, taken: true),
            Presentation(keyID: "A", issuedAt: start + 1200, now: start + 1301, taken: true),
        ]),
        ("each key has its own interval", [
            Presentation(keyID: "A", issuedAt: start, now: start, taken: true),
            Presentation(keyID: "B", issuedAt: start + 10, now: start + 10, taken: true),
            Presentation(keyID: "A", issuedAt: start + 20, now: start + 20, taken: false),
            Presentation(keyID: "B", issuedAt: start + 10, now: start + 30, taken: true),
        ]),
    ]

    @Test("a key's new token is taken only an interval after its last new one; tokens taken stay good",
          arguments: cases)
    func interval(_ name: String, _ presentations: [Presentation]) {
        let updates = ProviderTokenUpdates(interval: 1200)
        for (index, presentation) in presentations.enumerated() {
            #expect(updates.take(keyID: presentation.keyID, issuedAt: presentation.issuedAt, now: presentation.now)
                        == presentation.taken, "\(name): presentation \(index)")
        }
    }

    /// Sends `token` as the only request of its own turn; status and reason.
    static func answer(_ client: TestClient, token: String, index: Int = 0) throws -> (Int?, String?) {
        let stream = try client.submit(token: Fixture.token(index),
                                       headers: [("apns-topic", Fixture.topic), ("authorization", "bearer " + token)])
        #expect(client.runUntilClosed([stream]))
        return (client.responses[stream]?.status, client.responses[stream]?.reason)
    }

    @Test("with an interval, a key's new token is 429 TooManyProviderTokenUpdates on every connection; the one before is still taken")
    func enforced() throws {
        var configuration = try Fixture.configuration(.providerKeys([TestKeys.team, TestKeys.otherTeam]))
        configuration.tokenUpdateInterval = 1200
        let emulator = try APNsEmulator(configuration: configuration)
        try emulator.start()
        defer { emulator.stop() }
        let now = Int(time(nil))
        let first = try TestKeys.team.token(issuedAt: now - 120)
        let renewed = try TestKeys.team.token(issuedAt: now)
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        #expect(try Self.answer(client, token: first) == (200, nil))
        #expect(try Self.answer(client, token: renewed, index: 1) == (429, "TooManyProviderTokenUpdates"))
        #expect(try Self.answer(client, token: first, index: 2) == (200, nil))
        // The limit is the key's, not the connection's.
        let other = try TestClient(port: emulator.port, certificate: nil, key: nil)
        #expect(try Self.answer(other, token: renewed, index: 3) == (429, "TooManyProviderTokenUpdates"))
        // Another key has its own.
        let otherKey = try TestClient(port: emulator.port, certificate: nil, key: nil)
        #expect(try Self.answer(otherKey, token: try TestKeys.otherTeam.token(), index: 4) == (200, nil))
        #expect(emulator.acceptedCount == 3)
        #expect(emulator.rejectedCount == 2)
    }

    @Test("without an interval (the default), every new token is taken")
    func notEnforced() throws {
        let emulator = try Fixture.emulator(.providerKeys([TestKeys.team]))
        defer { emulator.stop() }
        #expect(emulator.configuration.tokenUpdateInterval == 0)
        let now = Int(time(nil))
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        for (index, issuedAt) in [now - 120, now - 60, now].enumerated() {
            #expect(try Self.answer(client, token: try TestKeys.team.token(issuedAt: issuedAt), index: index) == (200, nil))
        }
    }

    @Test("a negative interval is refused at start")
    func negativeInterval() throws {
        var configuration = try Fixture.configuration(.providerKeys([TestKeys.team]))
        configuration.tokenUpdateInterval = -1
        #expect(throws: APNsEmulatorError.self) { try APNsEmulator(configuration: configuration) }
    }
}
