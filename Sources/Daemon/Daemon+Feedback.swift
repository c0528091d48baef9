import Delivery
import Feedback
import FeedbackHook
import Fleet
import Observability
import Relay
import RelayCore

extension Daemon {
    /// With a fleet (REDIS_URL): the feedback lists kept in Redis, `sink`'s
    /// store this instance's buffer for them, its flusher started. Without
    /// one: `sink` as it is, every entry in this process.
    func shareFeedback(_ sink: FeedbackSink, fleet: Fleet?, configuration: Configuration,
                       logger: Logger) -> FeedbackSink {
        guard let fleet else { return sink }
        let shared = FleetFeedback(store: sink.store, link: fleet.commands, instance: fleet.instance) { line in
            logger.warning(line)
        }
        shared.start()
        logger.info("feedback: kept in Redis (\(FleetKeys.feedback(app: "<app>"))), FEEDBACK_MAX \(sink.store.maxPerApp) each")
        var outbox: FleetHookOutbox?
        if let hook = sink.hook {
            outbox = FleetHookOutbox(fleet: fleet, hook: hook, capacity: configuration.feedbackHookQueue) { line in
                logger.warning(line)
            }
            outbox?.start()
            logger.info("feedback hook: posts wait in Redis (\(FleetKeys.hookStream)), posted by any instance")
        }
        return FeedbackSink(store: sink.store, hook: sink.hook, shared: shared, hookOutbox: outbox)
    }

    /// Shutdown, before the hook's: stop reading the fleet's hook posts,
    /// and give the logs still buffered a second to reach Redis.
    func stopHookOutbox(_ sink: FeedbackSink, logger: Logger) {
        guard let outbox = sink.hookOutbox as? FleetHookOutbox else { return }
        let left = outbox.stop(within: .seconds(1))
        if left > 0 { logger.warning("feedback hook: \(left) logs not written to Redis: lost with this process") }
    }

    /// Shutdown, after the hook's: the acknowledgements of posts made
    /// answered before the links close (the posts not made stay in Redis
    /// for the other instances).
    func finishHookOutbox(_ sink: FeedbackSink) {
        (sink.hookOutbox as? FleetHookOutbox)?.waitForAcknowledgements(timeout: .seconds(2))
    }

    /// The hook's counts, with the logs the fleet's outbox dropped before
    /// Redis counted as the hook's own drops.
    func hookCounts(_ sink: FeedbackSink) -> FeedbackHookCounts? {
        guard var counts = sink.hook?.counts else { return nil }
        if let outbox = sink.hookOutbox as? FleetHookOutbox { counts.dropped += outbox.dropped }
        return counts
    }

    /// Shutdown, once nothing records any more: what this instance still
    /// holds is written to Redis (a few seconds at most), then the flusher
    /// stops; what Redis did not take is counted in a log line.
    func stopSharedFeedback(_ sink: FeedbackSink, logger: Logger) {
        guard let shared = sink.shared else { return }
        let left = shared.finish(within: Self.feedbackFlushGrace)
        if left > 0 {
            logger.warning("feedback: \(left) entries not written to Redis within \(Self.feedbackFlushGrace): lost with this process")
        }
    }

    static let feedbackFlushGrace: Duration = .seconds(3)
}
