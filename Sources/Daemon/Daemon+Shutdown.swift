import APNs
import Delivery
import Dispatch
import EventLoop
import Foundation
import HTTP1
import Observability
import Relay

extension Daemon {
    /// Stop accepting, let in-flight requests finish (bounded by the grace
    /// period), then GOAWAY and close the APNs connections. Each listener
    /// comes with its notifications in flight: a connection may close before
    /// its notification's answer, which is still waited for.
    ///
    /// The asynchronous notifications (`async`) drain within the same grace:
    /// each retry waiting for its time is tried at once, as its last try
    /// (waiting past the grace would lose it for sure); a try that fails
    /// after that retries on its timer if that falls within the grace. At
    /// the end of the grace what is still pending is given up, counted
    /// failed and logged: the queue lives in memory (lost on a crash too).
    func shutDown(servers: [(listener: any DrainableListener, deliveries: InFlightDeliveries)], clients: PerLoop<APNsClient>,
                  group: EventLoopGroup, async: (AsyncPushes, AsyncQueues)? = nil, grace: Duration, logger: Logger) {
        func isDrained(_ server: (listener: any DrainableListener, deliveries: InFlightDeliveries)) -> Bool {
            server.listener.isDrained && server.deliveries.inFlight == 0
        }
        let deadline = EventLoop.deadline(after: grace, from: EventLoop.monotonicNanoseconds())
        for server in servers { server.listener.beginShutdown() }
        if let (pushes, queues) = async, pushes.bound.pending > 0 {
            logger.info("\(pushes.bound.pending) asynchronous notifications pending: waiting retries tried now")
            queues.forEach { $0.retryAllNow() }
        }
        // A fleet's queue (REDIS_URL) keeps its pending entries in Redis:
        // only its tries in flight are waited for.
        func asyncDrained() -> Bool { async.map { $0.0.bound.pending == 0 && $0.0.counts.inFlight == 0 } ?? true }
        var forced = false
        while !(servers.allSatisfy(isDrained) && asyncDrained()) && EventLoop.monotonicNanoseconds() < deadline {
            // A second SIGTERM/SIGINT means "now": skip the rest of the grace.
            if let again = waitForBlockedSignal([SIGTERM, SIGINT], timeout: .milliseconds(10)) {
                logger.warning("\(again == SIGTERM ? "SIGTERM" : "SIGINT") again: not waiting for the grace period")
                forced = true
                break
            }
        }
        for server in servers where !isDrained(server) {
            logger.warning("grace period over: closing \(server.listener.counters.openConnections) connections, "
                + "\(server.deliveries.inFlight) notifications still in flight")
            server.listener.closeAllConnections()
        }
        if let (pushes, queues) = async, pushes.bound.pending > 0 {
            let left = pushes.bound.pending
            // Their places back and counted failed, on each loop; a loop
            // that does not answer within a second is not waited for.
            let done = DispatchSemaphore(value: 0)
            queues.forEach { queue in
                queue.dropWaiting()
                done.signal()
            }
            let waitUntil = DispatchTime.now() + .seconds(1)
            for _ in 0..<queues.count where done.wait(timeout: waitUntil) == .timedOut { break }
            logger.warning("grace period over: \(left) asynchronous notifications left undelivered "
                + "(\(pushes.counts.inFlight) in flight; the queue is in memory, they are lost)")
        }
        let closed = DispatchSemaphore(value: 0)
        let all = clients.all
        for (loop, client) in all {
            let box = UnsafeTransfer(client)
            loop.execute { box.value.shutdown { closed.signal() } }
        }
        // GOAWAY, then the open streams may finish: at most the rest of the
        // grace period plus a second.
        let now = EventLoop.monotonicNanoseconds()
        let remaining = forced ? 1_000_000_000 : max(deadline, now) - now + 1_000_000_000
        let waitUntil = DispatchTime.now() + .nanoseconds(Int(remaining))
        for _ in all where closed.wait(timeout: waitUntil) == .timedOut {
            logger.warning("APNs connections did not close in time")
            break
        }
        // The loops batch their request lines; none may be lost at exit.
        for server in servers { server.listener.flushLogs() }
        group.stopAndJoin()
    }
}
