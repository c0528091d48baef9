import APNs
import Dispatch
import EventLoop
import FCM
import Locking
import Observability
import Relay

/// Each loop's context (`LoopContext`) as a service: the loop's APNs and
/// FCM clients, the senders every route delivers through, and its log
/// buffer. Once the listeners are done, shutdown closes the clients (GOAWAY: their
/// open streams may finish within the rest of the grace period plus a
/// second), then writes the lines the loops still hold: none may be lost
/// at exit, and the clients' last answers log lines too.
final class LoopContextsService: Service {
    private let clients: PerLoop<APNsClient>
    private let fcmClients: PerLoop<FCMClient>
    private let contexts: LoopContexts
    private let metrics: RelayMetrics?
    private let report = Locked(APNsConnectionReport())
    private let logger: Logger

    init(clients: PerLoop<APNsClient>, fcmClients: PerLoop<FCMClient>, contexts: LoopContexts, metrics: RelayMetrics?,
         logger: Logger) {
        self.clients = clients
        self.fcmClients = fcmClients
        self.contexts = contexts
        self.metrics = metrics
        self.logger = logger
    }

    func stop(_ grace: GracePeriod) {
        let closed = DispatchSemaphore(value: 0)
        let all = clients.all
        for (loop, client) in all {
            let box = UnsafeTransfer(client)
            loop.execute { box.value.shutdown { closed.signal() } }
        }
        let fcm = fcmClients.all
        for (loop, client) in fcm {
            let box = UnsafeTransfer(client)
            loop.execute { box.value.shutdown { closed.signal() } }
        }
        let now = EventLoop.monotonicNanoseconds()
        let remaining = grace.cutShort ? 1_000_000_000 : max(grace.deadline, now) - now + 1_000_000_000
        let waitUntil = DispatchTime.now() + .nanoseconds(Int(remaining))
        for _ in 0..<(all.count + fcm.count) where closed.wait(timeout: waitUntil) == .timedOut {
            logger.warning("APNs or FCM connections did not close in time")
            break
        }
        contexts.forEach { $0.flushLog() }
    }

    /// Sums every loop's APNs client (each read on its own loop) into the
    /// gauges and counters, when there are metrics, and the log's
    /// connection lines (`APNsConnectionReport`). The sums lag by at most a
    /// tick.
    func tick(now: Int) {
        let all = clients.all
        let sums = APNsConnectionSums(loops: all.count)
        let (metrics, report, logger) = (metrics, report, logger)
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
