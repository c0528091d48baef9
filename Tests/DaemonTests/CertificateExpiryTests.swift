import Testing
@testable import Daemon
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

@Suite("Certificate expiry while running")
struct CertificateExpiryMonitorTests {
    @Test("silent between daily checks, the line again a day after startup")
    func daily() {
        let start = 1_800_000_000
        var monitor = CertificateExpiryMonitor(notAfter: start + 10 * 86_400, startedAt: start)
        #expect(monitor.tick(now: start + 1) == nil)
        #expect(monitor.tick(now: start + 86_399) == nil)
        #expect(monitor.tick(now: start + 86_400)?.level == .warning)
        #expect(monitor.tick(now: start + 86_401) == nil)
        #expect(monitor.tick(now: start + 2 * 86_400)?.level == .warning)
    }

    @Test("the error at once when the certificate expires, then daily")
    func expiresWhileRunning() {
        let start = 1_800_000_000
        var monitor = CertificateExpiryMonitor(notAfter: start + 5, startedAt: start)
        #expect(!monitor.isExpired(now: start + 5))
        #expect(monitor.tick(now: start + 5) == nil)
        #expect(monitor.isExpired(now: start + 6))
        #expect(monitor.tick(now: start + 6)?.level == .error)
        #expect(monitor.tick(now: start + 7) == nil)
        #expect(monitor.tick(now: start + 6 + 86_400)?.level == .error)
    }

    @Test("a certificate far from expiry never logs")
    func farAway() {
        let start = 1_800_000_000
        var monitor = CertificateExpiryMonitor(notAfter: start + 365 * 86_400, startedAt: start)
        for day in 0...3 { #expect(monitor.tick(now: start + day * 86_400) == nil) }
    }
}
