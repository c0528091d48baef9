import AsyncPush
import Delivery
import Fleet
import Observability
import Relay

/// The services start-up makes of the daemon's own start functions, their
/// shutdown and tick the functions that go with them.
extension Daemon {
    /// The fleet's links (REDIS_URL), stopped after everything that writes
    /// through them: `closeFleet` (the asynchronous queue's
    /// acknowledgements answered, then the links closed). Each tick, the
    /// links' state to the metrics.
    func fleetService(_ fleet: Fleet, async: FleetAsyncDelivery?, metrics: FleetMetrics?, logger: Logger) -> any Service {
        ServiceSteps(stop: { _ in closeFleet(fleet, async: async, logger: logger) }, tick: { _ in
            guard let metrics else { return }
            for link in fleet.links {
                metrics.publish(link: link.name, isConnected: link.isConnected, failures: link.failureCount)
            }
        })
    }

    /// The feedback lists and hook (`makeFeedback`),
    /// stopped once the loops, which record into them, have: queued hook
    /// posts get a little time and the rest are counted dropped (with Redis:
    /// the fleet's outbox stops reading first and its acknowledgements are
    /// answered after, the posts not made left there for the other
    /// instances); then what this instance holds of the feedback lists goes
    /// to Redis. Each tick, their counts to the provider API's metrics.
    func feedbackService(_ parts: FeedbackParts, metrics: ProviderMetrics?, logger: Logger) -> any Service {
        let sink = parts.sink
        return ServiceSteps(stop: { _ in
            stopHookOutbox(parts, logger: logger)
            parts.hook?.shutdown(within: .seconds(2))
            finishHookOutbox(parts)
            stopSharedFeedback(sink, logger: logger)
        }, tick: { _ in
            guard let metrics else { return }
            metrics.publish(feedback: sink.store.allCounts().mapValues { ($0.recorded, $0.dropped) })
            if let hook = hookCounts(parts) {
                metrics.publishHookPosts(delivered: hook.delivered, retried: hook.retried, failed: hook.failed,
                                         dropped: hook.dropped)
            }
            if let shared = sink.shared { metrics.publish(feedbackUnflushed: shared.unflushed) }
        })
    }
}
