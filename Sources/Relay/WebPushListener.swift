import Delivery
import EventLoop
import Feedback
import HTTP1
import HTTPCore
import Observability
import RelayCore
import TLS

extension HTTP1Listener where Handler == WebPushHandler {
    /// The Web Push listener: a `WebPushHandler` on each loop, over the loop's
    /// context `loopContexts` gives (made before any listener), its
    /// notifications counted in `deliveries` (`MAX_IN_FLIGHT`). `publicURL`:
    /// `PUBLIC_URL`, the origin a restricted endpoint's VAPID `aud` must
    /// name; nil: each request's scheme and `Host`.
    public convenience init(options: ListenerOptions, loops: [EventLoop], tlsContext: TLSContext?,
                            loopContexts: LoopContexts, publicURL: String? = nil, logger: Logger,
                            counters: HTTP1ListenerCounters? = nil, deliveries: InFlightDeliveries,
                            feedback: FeedbackSink) {
        let listenerIsTLS = tlsContext != nil
        self.init(options: options, loops: loops, tlsContext: tlsContext, counters: counters,
                  warn: { logger.warning($0) }) { loop in
            WebPushHandler(loopContext: loopContexts.value(on: loop), counters: deliveries, feedback: feedback,
                         publicURL: publicURL, listenerIsTLS: listenerIsTLS)
        }
    }
}

extension WebPushHandler: HTTP1RequestHandler {
    /// Plain text; a sender too slow to send its request is closed on, not
    /// answered 408: Pleroma and Akkoma delete a subscription on any 4xx.
    public var refusals: HTTP1Refusals { Self.refusals }

    private static let refusals = HTTP1Refusals.plainText.closingSilentlyOnTimeouts()
}
