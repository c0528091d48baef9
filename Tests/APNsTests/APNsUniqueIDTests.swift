import APNsCore
import APNsEmulator
import Testing
import TestSupport
@testable import APNs

/// APNs' `apns-unique-id` (its development environment sends one on every
/// answer): read for Apple's request passed on (`sendProxied`) and handed to
/// its completion, never to the other routes' (`send`).
@Suite("APNs client: apns-unique-id of Apple's request", .serialized)
struct APNsUniqueIDTests {
    @Test("development: each answer's apns-unique-id reaches sendProxied's completion, as the emulator recorded it; a refusal's too")
    func development() throws {
        let emulator = try Fixtures.certificateEmulator(record: true, environment: .development)
        defer { emulator.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: emulator.port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity())))
        let accepted = try Fixtures.notifications(count: 2)
        let refused = try Fixtures.notification(token: APNsFaultToken.token(code: 0x02))
        let answers = try client.sendProxied(accepted + [refused])
        #expect(answers.map(\.delivery.outcome) == [
            .apns(status: 200, reason: nil, apnsID: accepted[0].apnsID),
            .apns(status: 200, reason: nil, apnsID: accepted[1].apnsID),
            .apns(status: 400, reason: .badDeviceToken, apnsID: refused.apnsID),
        ])
        let recorded = emulator.receivedNotifications().map(\.uniqueID)
        #expect(recorded.count == 2 && recorded.allSatisfy { $0 != nil })
        #expect(Array(answers.prefix(2).map(\.uniqueID)) == recorded)
        #expect(answers[2].uniqueID != nil && !recorded.contains(answers[2].uniqueID))
        #expect(client.shutdown())
    }

    @Test("production: no apns-unique-id, so none is handed on")
    func production() throws {
        let emulator = try Fixtures.certificateEmulator(record: true)
        defer { emulator.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: emulator.port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity())))
        let answers = try client.sendProxied(Fixtures.notifications(count: 1))
        #expect(answers.map(\.delivery.outcome.isAccepted) == [true])
        #expect(answers.map(\.uniqueID) == [nil])
        #expect(client.shutdown())
    }

    @Test("an attempt sent again forgets the apns-unique-id of its first answer")
    func forgetAnswer() throws {
        let request = PooledProxiedNotification(notification: try Fixtures.notification(token: Fixtures.deviceToken(0))) { _, _ in }
        request.uniqueID = "a8f2c3d4-0000-4000-8000-000000000001"
        request.forgetAnswer()
        #expect(request.uniqueID == nil)
    }
}
