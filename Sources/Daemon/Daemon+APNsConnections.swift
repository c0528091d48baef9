import APNs
import EventLoop
import Locking
import Observability
import Relay

extension Daemon {
    /// Each tick: sums every loop's APNs client (each read on its own loop)
    /// into the gauges and counters, when there are metrics, and the log's
    /// connection lines (`APNsConnectionReport`). The sums lag by at most a
    /// tick.
    func refreshAPNsStatus(_ metrics: RelayMetrics?, clients: PerLoop<APNsClient>,
                           report: Locked<APNsConnectionReport>, logger: Logger) {
        let all = clients.all
        let sums = APNsConnectionSums(loops: all.count)
        for (index, (loop, client)) in all.enumerated() {
            let box = UnsafeTransfer(client)
            loop.execute {
                guard let total = sums.record(box.value.status, loop: index) else { return }
                if let metrics {
                    metrics.setAPNsConnections(total.connections)
                    metrics.setAPNsQueued(total.queued)
                    metrics.setAPNsCounters(total.counters)
                }
                let lines = report.withLock {
                    $0.lines(counters: total.counters, lastConnectFailure: total.lastConnectFailure,
                             lastConnectionLoss: total.lastConnectionLoss)
                }
                for line in lines { logger.warning(line) }
            }
        }
    }
}
