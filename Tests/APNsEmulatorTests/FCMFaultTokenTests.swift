@testable import APNsEmulator
import FCMCore
import Testing

@Suite("FCM fault tokens")
struct FCMFaultTokenTests {
    /// Each row of the relay's FCM answer table, with what the relay reads
    /// of the answer (FCMCore's FCMError).
    struct Row: Sendable, CustomTestStringConvertible {
        var code: UInt8
        var status: Int
        var reason: FCMReason
        var namesToken = false
        var retryAfter: Int? = nil
        var testDescription: String { "fa11fa11" + String(code, radix: 16) }
    }

    static let rows: [Row] = [
        Row(code: 0x01, status: 404, reason: .unregistered),
        Row(code: 0x02, status: 403, reason: .senderIDMismatch),
        Row(code: 0x03, status: 400, reason: .invalidArgument, namesToken: true),
        Row(code: 0x04, status: 400, reason: .invalidArgument),
        Row(code: 0x05, status: 429, reason: .quotaExceeded, retryAfter: 30),
        Row(code: 0x06, status: 500, reason: .internalError),
        Row(code: 0x07, status: 503, reason: .unavailable),
        Row(code: 0x08, status: 401, reason: .thirdPartyAuthError),
        Row(code: 0x0b, status: 429, reason: .quotaExceeded),
        Row(code: 0x0c, status: 503, reason: .unavailable, retryAfter: 7),
        Row(code: 0x0d, status: 403, reason: .permissionDenied),
    ]

    @Test("each rejecting fault answers FCM's status, reason and retry-after", arguments: rows)
    func rejection(_ row: Row) throws {
        let token = FCMFaultToken.token(code: row.code)
        #expect(FCMToken(token) != nil)
        guard case .reject(let rejection)? = FCMFaultToken.action(forToken: token[...].utf8) else {
            Issue.record("no rejection for \(token)")
            return
        }
        #expect(rejection.status == row.status)
        #expect(rejection.retryAfter == row.retryAfter)
        let read = try #require(rejection.readByRelay)
        #expect(read.reason == row.reason)
        #expect(read.namesToken == row.namesToken)
    }

    @Test("codes 1…13 in order; 9 is 401 once, 10 no answer; other tokens are ordinary")
    func table() {
        #expect(FCMFaultToken.table.map(\.code) == Array(1...13))
        #expect(FCMFaultToken.action(forCode: 0x09) == .unauthenticatedOnce)
        #expect(FCMFaultToken.action(forCode: 0x0a) == .noAnswer)
        #expect(FCMFaultToken.action(forCode: 0x0e) == nil)
        #expect(FCMFaultToken.action(forToken: FCMFixture.registrationToken[...].utf8) == nil)
        #expect(FCMFaultToken.action(forToken: "FA11FA1101:APA91b"[...].utf8) != nil)
        #expect(FCMFaultToken.token(code: 1, filler: 1) != FCMFaultToken.token(code: 1, filler: 2))
    }
}
