import APNs
import EventLoop
import Relay

extension Daemon {
    /// Sums every loop's APNs connections by state, and the notifications
    /// waiting for a stream, into the gauges (each client is read on its own
    /// loop; the gauges lag by at most a tick).
    func refreshAPNsConnections(_ metrics: RelayMetrics, clients: PerLoop<APNsClient>) {
        let all = clients.all
        let sums = APNsConnectionSums(loops: all.count)
        for (index, (loop, client)) in all.enumerated() {
            let box = UnsafeTransfer(client)
            loop.execute {
                if let total = sums.record(box.value.status, loop: index) {
                    metrics.setAPNsConnections(total.connections)
                    metrics.setAPNsQueued(total.queued)
                }
            }
        }
    }
}
