import Feedback
import FeedbackHook
import Fleet
import Observability
import Relay
import RelayCore

/// What the daemon made of feedback: the sink every path records into, and
/// the pieces behind it that metrics and shutdown reach, each as the type
/// it was built as.
struct FeedbackParts {
    let sink: FeedbackSink
    /// FEEDBACK_HOOK_URL's poster.
    let hook: FeedbackHook?
    /// With a fleet and a hook: where the sink's failed-push logs wait in
    /// Redis, posted by any instance's hook.
    let hookOutbox: FleetHookOutbox?
}

extension Daemon {
    /// The feedback list (FEEDBACK_MAX per app) and, with FEEDBACK_HOOK_URL,
    /// the hook's worker. With a fleet (REDIS_URL): the lists kept in Redis,
    /// the store this instance's buffer for them, its flusher started, and
    /// the hook's posts through Redis. Without one: every entry in this
    /// process.
    func makeFeedback(_ configuration: Configuration, fleet: Fleet?, logger: Logger)
        throws(StartupFailure) -> FeedbackParts {
        let store = FeedbackStore(maxPerApp: configuration.feedbackMax)
        let hook = try makeFeedbackHook(configuration, logger: logger)
        guard let fleet else { return FeedbackParts(sink: FeedbackSink(store: store, hook: hook), hook: hook, hookOutbox: nil) }
        let shared = FleetFeedback(store: store, link: fleet.commands, instance: fleet.instance, logger: logger)
        shared.start()
        logger.info("feedback: kept in Redis (\(FleetKeys.feedback(app: "<app>"))), FEEDBACK_MAX \(store.maxPerApp) each")
        var outbox: FleetHookOutbox?
        if let hook {
            outbox = FleetHookOutbox(fleet: fleet, hook: hook, capacity: configuration.feedbackHookQueue,
                                     logger: logger)
            outbox?.start()
            logger.info("feedback hook: posts wait in Redis (\(FleetKeys.hookStream)), posted by any instance")
        }
        return FeedbackParts(sink: FeedbackSink(store: store, hook: outbox ?? hook, shared: shared), hook: hook,
                             hookOutbox: outbox)
    }

    /// Shutdown, before the hook's: stop reading the fleet's hook posts,
    /// and give the logs still buffered a second to reach Redis.
    func stopHookOutbox(_ feedback: FeedbackParts, logger: Logger) {
        guard let outbox = feedback.hookOutbox else { return }
        let left = outbox.stop(within: .seconds(1))
        if left > 0 { logger.warning("feedback hook: \(left) logs not written to Redis: lost with this process") }
    }

    /// Shutdown, after the hook's: the acknowledgements of posts made
    /// answered before the links close (the posts not made stay in Redis
    /// for the other instances).
    func finishHookOutbox(_ feedback: FeedbackParts) {
        feedback.hookOutbox?.waitForAcknowledgements(timeout: .seconds(2))
    }

    /// The hook's counts, with the logs the fleet's outbox dropped before
    /// Redis counted as the hook's own drops.
    func hookCounts(_ feedback: FeedbackParts) -> FeedbackHookCounts? {
        guard var counts = feedback.hook?.counts else { return nil }
        if let outbox = feedback.hookOutbox { counts.dropped += outbox.dropped }
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
