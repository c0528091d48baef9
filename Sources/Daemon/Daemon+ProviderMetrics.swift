import Delivery
import Observability

extension Daemon {
    /// The tick's copy of the feedback lists', the hook's and the
    /// asynchronous queue's counts into the provider API's metrics, as the
    /// numbers Observability takes.
    func publishProviderMetrics(_ metrics: ProviderMetrics, feedback: FeedbackSink, async: AsyncPushes?) {
        metrics.publish(feedback: feedback.store.allCounts().mapValues { ($0.recorded, $0.dropped) })
        if let hook = hookCounts(feedback) {
            metrics.publishHookPosts(delivered: hook.delivered, retried: hook.retried, failed: hook.failed,
                                     dropped: hook.dropped)
        }
        if let async {
            let counts = async.counts
            metrics.publishAsync(queued: async.shared?.length ?? async.bound.pending, inFlight: counts.inFlight,
                                 delivered: counts.delivered, failed: counts.failed, retried: counts.retried,
                                 claimed: async.shared?.claimed)
        }
        if let shared = feedback.shared { metrics.publish(feedbackUnflushed: shared.unflushed) }
    }
}
