import EventLoop
import HTTP1
import RelayCore
import TLS

extension HTTP1Listener where Handler == RelayHandler {
    /// The Web Push listener: a `RelayHandler` on each loop with the sender
    /// `senderFactory` makes for it, its notifications counted in
    /// `deliveries` (`MAX_IN_FLIGHT`). `publicURL`: `PUBLIC_URL`, the origin
    /// a restricted endpoint's VAPID `aud` must name; nil: each request's
    /// scheme and `Host`. `metrics`: counted per notification when given
    /// (see `RelayMetrics`).
    public convenience init(options: ListenerOptions, loops: [EventLoop], tlsContext: TLSContext?, apps: RelayApps,
                            publicURL: String? = nil, logger: Logger, counters: HTTP1ListenerCounters? = nil,
                            deliveries: InFlightDeliveries, metrics: RelayMetrics? = nil, feedback: FeedbackSink? = nil,
                            senderFactory: @escaping @Sendable (EventLoop) -> NotificationSender) {
        let listenerIsTLS = tlsContext != nil
        self.init(options: options, loops: loops, tlsContext: tlsContext, counters: counters,
                  warn: { logger.warning($0) }) { loop in
            RelayHandler(sender: senderFactory(loop), apps: apps, counters: deliveries, logger: logger, loop: loop,
                         publicURL: publicURL, listenerIsTLS: listenerIsTLS, metrics: metrics, feedback: feedback)
        }
    }
}

extension RelayHandler: HTTP1RequestHandler {
    public var refusals: HTTP1Refusals { .plainText }
}
