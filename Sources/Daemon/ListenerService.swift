import Delivery
import HTTP1
import Observability

/// An HTTP/1 listener as a service. The Web Push and provider API
/// listeners drain: shutdown stops accepting, waits for their connections
/// and their notifications in flight (a connection may close before its
/// notification's answer, which is still waited for), then closes what is
/// left. The metrics listener closes at once: a scrape is nobody's
/// notification.
final class ListenerService<Listener: DrainableListener>: Service {
    let listener: Listener
    /// Nil: the listener closes its connections on the first pass.
    private let deliveries: InFlightDeliveries?
    private let logger: Logger

    /// A listener whose requests are notifications, counted in `deliveries`.
    init(draining listener: Listener, deliveries: InFlightDeliveries, logger: Logger) {
        self.listener = listener
        self.deliveries = deliveries
        self.logger = logger
    }

    /// A listener whose connections close as shutdown begins.
    init(closingAtOnce listener: Listener, logger: Logger) {
        self.listener = listener
        deliveries = nil
        self.logger = logger
    }

    func stopAccepting() {
        listener.beginShutdown()
        if deliveries == nil { listener.closeAllConnections() }
    }

    var isDrained: Bool {
        guard let deliveries else { return true }
        return listener.isDrained && deliveries.inFlight == 0
    }

    func stop(_ grace: GracePeriod) {
        guard let deliveries, !isDrained else { return }
        logger.warning("grace period over: closing \(listener.counters.openConnections) connections, "
            + "\(deliveries.inFlight) notifications still in flight")
        listener.closeAllConnections()
    }
}
