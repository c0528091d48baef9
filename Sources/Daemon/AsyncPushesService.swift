import AsyncPush
import Dispatch
import Observability

/// The provider API's asynchronous notifications (`AsyncPushes`, each
/// loop's queue in `queues`) as a service. They drain within the grace
/// period: each retry waiting for its time is tried at once, as its last
/// try (waiting past the grace would lose it for sure); a try that fails
/// after that retries on its timer if that falls within the grace. At the
/// end of the grace what is still pending is given up, counted failed and
/// logged: the queue lives in memory (lost on a crash too). A fleet's
/// queue (REDIS_URL) keeps its pending entries in Redis: only its tries in
/// flight are waited for.
final class AsyncPushesService: Service {
    private let pushes: AsyncPushes
    private let metrics: ProviderMetrics?
    private let logger: Logger

    init(_ pushes: AsyncPushes, metrics: ProviderMetrics?, logger: Logger) {
        self.pushes = pushes
        self.metrics = metrics
        self.logger = logger
    }

    func stopAccepting() {
        guard pushes.bound.pending > 0 else { return }
        logger.info("\(pushes.bound.pending) asynchronous notifications pending: waiting retries tried now")
        pushes.queues.forEach { $0.retryAllNow() }
    }

    var isDrained: Bool { pushes.bound.pending == 0 && pushes.counts.inFlight == 0 }

    func stop(_ grace: GracePeriod) {
        let left = pushes.bound.pending
        guard left > 0 else { return }
        // Their places back and counted failed, on each loop; a loop that
        // does not answer within a second is not waited for.
        let done = DispatchSemaphore(value: 0)
        pushes.queues.forEach { queue in
            queue.dropWaiting()
            done.signal()
        }
        let waitUntil = DispatchTime.now() + .seconds(1)
        for _ in 0..<pushes.queues.count where done.wait(timeout: waitUntil) == .timedOut { break }
        logger.warning("grace period over: \(left) asynchronous notifications left undelivered "
            + "(\(pushes.counts.inFlight) in flight; the queue is in memory, they are lost)")
    }

    /// `toot_relay_api_async_*`; with a fleet's queue, `queued` is the
    /// fleet's stream length and what this instance claimed counts too.
    func tick(now: Int) {
        guard let metrics else { return }
        let counts = pushes.counts
        metrics.publishAsync(queued: pushes.shared?.length ?? pushes.bound.pending, inFlight: counts.inFlight,
                             delivered: counts.delivered, failed: counts.failed, retried: counts.retried,
                             claimed: pushes.shared?.claimed)
    }
}
