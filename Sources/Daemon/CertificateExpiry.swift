import RelayCore
import TLS

/// What the log says about the APNs client certificate's expiry, checked at
/// startup and once a day: a warning within `warningWindow` of `notAfter`,
/// an error once it has passed (APNs then refuses every notification, and
/// the relay answers 502 so Mastodon keeps the subscriptions).
enum CertificateExpiry {
    /// 30 days: Apple's certificates last a year; a month leaves time to
    /// renew in the developer portal.
    static let warningWindow = 30 * 86_400

    /// The level and line to log, or nil when expiry is further away.
    /// `subject` names the certificate ("APNs client certificate of app
    /// toot (production)").
    static func check(notAfter: Int, now: Int,
                             subject: String = "APNs client certificate") -> (level: LogLevel, message: String)? {
        if now > notAfter {
            return (.error, "\(subject) expired on \(certificateDateText(notAfter)): APNs refuses every "
                + "notification; renew it and reload (SIGHUP) or restart")
        }
        let remaining = notAfter - now
        guard remaining <= warningWindow else { return nil }
        let days = remaining / 86_400
        return (.warning, "\(subject) expires on \(certificateDateText(notAfter)) (in \(days) "
            + "day\(days == 1 ? "" : "s")): renew it")
    }
}

/// The running relay's view of its certificate's expiry, asked once a
/// second: the expiry line again every day after startup, and the error at
/// once when the certificate expires while the relay runs (from then on
/// APNs refuses the TLS handshake, which is no 403: `isExpired` tells the
/// daemon to turn the health check 503 itself).
struct CertificateExpiryMonitor: Sendable {
    let notAfter: Int
    private var nextDailyCheck: Int
    private var reportedExpiry = false

    /// `startedAt`: when the startup check was logged.
    init(notAfter: Int, startedAt now: Int) {
        self.notAfter = notAfter
        nextDailyCheck = now + 86_400
        reportedExpiry = now > notAfter
    }

    func isExpired(now: Int) -> Bool { now > notAfter }

    /// The line to log at `now`, if any.
    mutating func tick(now: Int, subject: String = "APNs client certificate") -> (level: LogLevel, message: String)? {
        if isExpired(now: now) && !reportedExpiry {
            reportedExpiry = true
            nextDailyCheck = now + 86_400
            return CertificateExpiry.check(notAfter: notAfter, now: now, subject: subject)
        }
        guard now >= nextDailyCheck else { return nil }
        nextDailyCheck = now + 86_400
        return CertificateExpiry.check(notAfter: notAfter, now: now, subject: subject)
    }
}
