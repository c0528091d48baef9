import APNs
import HTTP2Client

/// The log's APNs connection lines, from each tick's sums over every loop's
/// client: a warning for the tick in which connection attempts failed, and
/// one for the tick in which ready connections died, each with the count
/// since the last line and one failure's words (the host, the system's or
/// TLS's reason; never a credential). Requests that meet a failure say it in
/// their own lines too, but a connection that dies between requests, or an
/// APNs that cannot be reached while nothing is sent, shows only here. A
/// tick without new failures says nothing: attempts are spaced by the
/// pool's backoff, so an outage costs a line per attempt at most.
public struct APNsConnectionReport: Sendable {
    private var reported = APNsCounters()

    public init() {}

    /// The lines for a tick whose sums are `counters` (monotonic: closed
    /// pools' counts stay in them) and the failures last seen.
    public mutating func lines(counters: APNsCounters, lastConnectFailure: ConnectionFailure?,
                               lastConnectionLoss: ConnectionFailure?) -> [String] {
        var lines: [String] = []
        let failed = counters.connectFailures - reported.connectFailures
        if failed > 0 {
            let detail = lastConnectFailure.map { ": \($0)" } ?? ""
            lines.append("APNs: \(failed) connection attempt\(failed == 1 ? "" : "s") failed\(detail)")
        }
        let lost = counters.connectionsLost - reported.connectionsLost
        if lost > 0 {
            let detail = lastConnectionLoss.map { ": \($0)" } ?? ""
            lines.append("APNs: \(lost) connection\(lost == 1 ? "" : "s") lost\(detail)")
        }
        reported = counters
        return lines
    }
}
