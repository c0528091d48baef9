import APNs
import Delivery
import Dispatch
import EventLoop
import Foundation
import HTTP1
import Relay

extension Daemon {
    /// Stop accepting, let in-flight requests finish (bounded by the grace
    /// period), then GOAWAY and close the APNs connections. Each listener
    /// comes with its notifications in flight: a connection may close before
    /// its notification's answer, which is still waited for.
    func shutDown(servers: [(listener: any DrainableListener, deliveries: InFlightDeliveries)], clients: PerLoop<APNsClient>,
                  group: EventLoopGroup, grace: Duration, logger: Logger) {
        func isDrained(_ server: (listener: any DrainableListener, deliveries: InFlightDeliveries)) -> Bool {
            server.listener.isDrained && server.deliveries.inFlight == 0
        }
        let deadline = EventLoop.deadline(after: grace, from: EventLoop.monotonicNanoseconds())
        for server in servers { server.listener.beginShutdown() }
        var forced = false
        while !servers.allSatisfy(isDrained) && EventLoop.monotonicNanoseconds() < deadline {
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
