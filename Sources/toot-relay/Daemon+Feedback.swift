import Delivery
import Feedback
import Fleet
import Relay

extension Daemon {
    /// With a fleet (REDIS_URL): the feedback lists kept in Redis, `sink`'s
    /// store this instance's buffer for them, its flusher started. Without
    /// one: `sink` as it is, every entry in this process.
    func shareFeedback(_ sink: FeedbackSink, fleet: Fleet?, logger: Logger) -> FeedbackSink {
        guard let fleet else { return sink }
        let shared = FleetFeedback(store: sink.store, link: fleet.commands, instance: fleet.instance) { line in
            logger.warning(line)
        }
        shared.start()
        logger.info("feedback: kept in Redis (\(FleetKeys.feedback(app: "<app>"))), FEEDBACK_MAX \(sink.store.maxPerApp) each")
        return FeedbackSink(store: sink.store, hook: sink.hook, shared: shared)
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
