import EventLoop
import RelayCore
import TLS

extension RelayServer where Handler == RelayHandler {
    /// The Web Push listener: a `RelayHandler` on each loop with the sender
    /// `senderFactory` makes for it, its notifications counted in
    /// `deliveries` (`MAX_IN_FLIGHT`). `metrics`: counted per notification
    /// when given (see `RelayMetrics`).
    public convenience init(options: ListenerOptions, loops: [EventLoop], tlsContext: TLSContext?, apps: RelayApps,
                            logger: Logger, counters: HTTP1ListenerCounters? = nil, deliveries: InFlightDeliveries,
                            metrics: RelayMetrics? = nil, feedback: FeedbackSink? = nil,
                            senderFactory: @escaping @Sendable (EventLoop) -> NotificationSender) {
        let publicURL = options.publicURL
        let listenerIsTLS = tlsContext != nil
        self.init(options: options, loops: loops, tlsContext: tlsContext, logger: logger, counters: counters) { loop in
            RelayHandler(sender: senderFactory(loop), apps: apps, counters: deliveries, logger: logger, loop: loop,
                         publicURL: publicURL, listenerIsTLS: listenerIsTLS, metrics: metrics, feedback: feedback)
        }
    }
}
