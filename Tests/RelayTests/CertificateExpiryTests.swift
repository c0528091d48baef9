import Testing
@testable import Relay
import RelayCore

@Suite("Certificate expiry in the log")
struct CertificateExpiryTests {
    static let now = 1_800_000_000

    @Test("nothing more than 30 days ahead, a warning within 30 days, an error once expired", arguments: [
        (31 * 86_400, nil),
        (30 * 86_400 + 1, nil),
        (30 * 86_400, LogLevel.warning),
        (86_400, .warning),
        (1, .warning),
        (0, .warning),
        (-1, .error),
        (-400 * 86_400, .error),
    ] as [(Int, LogLevel?)])
    func level(secondsLeft: Int, expected: LogLevel?) {
        #expect(CertificateExpiry.check(notAfter: Self.now + secondsLeft, now: Self.now)?.level == expected)
    }

    @Test("the lines name the date and the days left")
    func lines() throws {
        let warning = try #require(CertificateExpiry.check(notAfter: 1_800_000_000 + 86_400 * 10, now: Self.now))
        #expect(warning.message.contains("expires on 2027-01-25T08:00:00Z (in 10 days)"))
        let error = try #require(CertificateExpiry.check(notAfter: 1_700_000_000, now: Self.now))
        #expect(error.message.contains("expired on 2023-11-14T22:13:20Z"))
    }
}
