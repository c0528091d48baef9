import APNs
import Testing

@testable import Observability

@Suite("APNs connection lines")
struct APNsConnectionReportTests {
    static func counters(failed: Int = 0, lost: Int = 0, opened: Int = 0) -> APNsCounters {
        var counters = APNsCounters()
        counters.connectFailures = failed
        counters.connectionsLost = lost
        counters.connectionsOpened = opened
        return counters
    }

    @Test("a tick says how many attempts failed and connections died since the last line, with one failure's words")
    func linesForNewFailures() {
        var report = APNsConnectionReport()
        #expect(report.lines(counters: Self.counters(opened: 3), lastConnectFailure: nil, lastConnectionLoss: nil) == [])
        #expect(report.lines(counters: Self.counters(failed: 1, opened: 3),
                             lastConnectFailure: .connect("api.push.apple.com:443: Connection refused"),
                             lastConnectionLoss: nil)
            == ["APNs: 1 connection attempt failed: api.push.apple.com:443: Connection refused"])
        #expect(report.lines(counters: Self.counters(failed: 4, lost: 2, opened: 3),
                             lastConnectFailure: .tls("certificate verify failed"),
                             lastConnectionLoss: .lost("no PING answer within 5 s"))
            == ["APNs: 3 connection attempts failed: certificate verify failed",
                "APNs: 2 connections lost: no PING answer within 5 s"])
    }

    @Test("a tick without new failures says nothing, though the last failures are still known")
    func quietWithoutNewFailures() {
        var report = APNsConnectionReport()
        _ = report.lines(counters: Self.counters(failed: 2, lost: 1), lastConnectFailure: .connect("refused"),
                         lastConnectionLoss: .lost("reset"))
        #expect(report.lines(counters: Self.counters(failed: 2, lost: 1, opened: 5), lastConnectFailure: .connect("refused"),
                             lastConnectionLoss: .lost("reset")) == [])
    }
}
