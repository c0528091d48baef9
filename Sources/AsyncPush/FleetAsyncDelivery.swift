import Delivery
import EventLoop
import Feedback
import Fleet
import Locking
import Observability
import RelayCore
import Synchronization

/// Delivers what this instance reads from the fleet's stream: each entry
/// decoded (a bad one is a log line naming its id and field, counted
/// failed, acknowledged and dropped), handed to a loop in turn, and tried
/// by that loop's `AsyncDeliveryQueue` (the retry policy, the final
/// failure's log to the hook, as in the in-process queue); acknowledged
/// when done, with the dead token its end named appended to the app's
/// feedback list in the same step.
///
/// The app is looked up by id on the loop at delivery time, in this
/// instance's apps (configured, then provisioned). An app unknown here is
/// tried again after the policy's backoff, up to `API_ASYNC_MAX_TRIES`
/// (during a rolling change of the apps file, instances differ for a
/// while), then fails for good: a failed-push log to the hook, no APNs
/// request. An app that cannot send it here (no credential for its APNs
/// environment, no FCM credentials, or no FCM client on this instance)
/// fails it at once.
///
/// Shutdown (`stop`): no more reads or claims, no retry starts; tries in
/// flight finish and are acknowledged; whatever is not acknowledged stays
/// pending in Redis and another instance claims it after `REDIS_CLAIM_IDLE`.
///
/// An entry handed out more than `maxDeliveries` times is not tried
/// again: every instance that held it stopped before finishing it, and a
/// notification that crashes whoever delivers it would otherwise take the
/// fleet down one instance per `REDIS_CLAIM_IDLE` for as long as it lives.
/// It fails for good (the hook, counted failed) with a log line naming its
/// id.
public final class FleetAsyncDelivery: Sendable {
    /// A rolling restart hands an entry waiting for a retry to another
    /// instance once per instance restarted; ten is more than any
    /// restart of a fleet, and few enough crashes.
    public static let maxDeliveries = 10

    public let queue: FleetAsyncQueue
    /// What `start` was given: the loops' queues, and the counts.
    private let pushes = Locked<AsyncPushes?>(nil)
    private let next = Atomic<Int>(0)
    private let logger: Logger

    /// Makes the queue (`add` works at once); `start` begins delivering.
    /// `capacity`: entries this instance holds at most.
    public init(fleet: Fleet, maxPending: Int, capacity: Int, logger: Logger) {
        self.logger = logger
        let box = Locked<FleetAsyncDelivery?>(nil)
        queue = FleetAsyncQueue(fleet: fleet, maxPending: maxPending, capacity: capacity, logger: logger) { entries, _ in
            box.withLock { $0 }?.receive(entries)
        }
        box.withLock { $0 = self }
    }

    /// Starts reading, handing what it reads to the loops' queues of
    /// `pushes` (the API listener's, made before).
    public func start(pushes: AsyncPushes) {
        self.pushes.withLock { $0 = pushes }
        queue.stream.start()
    }

    /// Shutdown: no more reads, claims or retries.
    public func stop() {
        pushes.withLock { $0 }?.stopRetries()
        queue.stream.stop()
    }

    private func receive(_ entries: [StreamEntry]) {
        guard let pushes = pushes.withLock({ $0 }) else { return }
        let queues = pushes.queues.all
        guard !queues.isEmpty else { return }
        // Each entry with the deliveries it is given up after, nil to deliver.
        var perLoop = [[(AsyncNotification, givenUpAfter: Int?)]](repeating: [], count: queues.count)
        for entry in entries {
            do throws(AsyncNotification.DecodingError) {
                guard let fields = entry.fields else {
                    throw AsyncNotification.DecodingError(field: "-", problem: "no fields")
                }
                var item = try AsyncNotification(fields: fields)
                item.receipt = entry.id
                var givenUpAfter: Int?
                if let deliveries = entry.deliveries, deliveries > Self.maxDeliveries {
                    givenUpAfter = deliveries
                    logger.warning("async stream: entry \(entry.id) given up after \(deliveries) deliveries (every instance "
                        + "that took it stopped before finishing it: a crash?); it goes to the hook as failed")
                }
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % perLoop.count
                perLoop[index].append((item, givenUpAfter))
            } catch {
                logger.warning("async stream: entry \(entry.id) dropped: \(error)")
                pushes.counts.countFailed()
                queue.stream.done(entry.id)
            }
        }
        for (index, batch) in perLoop.enumerated() where !batch.isEmpty {
            let (loop, box) = queues[index]
            let carried = UnsafeTransfer((box.value, batch))
            loop.execute { [self] in
                let (loopQueue, batch) = carried.value
                for (item, givenUpAfter) in batch {
                    if let givenUpAfter {
                        fail(item, in: loopQueue, why: "given up after \(givenUpAfter) deliveries: every relay "
                             + "instance that took it stopped before finishing it")
                    } else {
                        deliver(item, in: loopQueue)
                    }
                }
            }
        }
    }

    // MARK: on a loop

    /// Tries `item` in `loopQueue` for its app in this instance's apps; an
    /// app unknown here waits for the policy's backoff, up to its tries.
    private func deliver(_ item: AsyncNotification, in loopQueue: AsyncDeliveryQueue) {
        guard let app = loopQueue.apps(item.appID) else { return unknownApp(item, in: loopQueue) }
        if let refusal = item.refusal(by: app) { return fail(item, in: loopQueue, why: refusal) }
        if case .fcm = item.message, loopQueue.fcmPath == nil {
            return fail(item, in: loopQueue, why: "this relay has no FCM client")
        }
        loopQueue.enqueue(item, app: app)
    }

    private func unknownApp(_ item: AsyncNotification, in loopQueue: AsyncDeliveryQueue) {
        var item = item
        item.tries += 1
        guard item.tries < loopQueue.policy.maxTries else {
            return fail(item, in: loopQueue, why: "no app \(item.appID)")
        }
        loopQueue.counts.countRetried()
        var random = SystemRandomNumberGenerator()
        let delay = loopQueue.policy.jitteredDelay(afterFailedTries: item.tries, random: &random)
        loopQueue.schedule(delay) { [self] in deliver(item, in: loopQueue) }
    }

    /// Fails for good, not tried: the hook hears of it, counted failed,
    /// acknowledged.
    private func fail(_ item: AsyncNotification, in loopQueue: AsyncDeliveryQueue, why: String) {
        loopQueue.path.feedback.post(FailedPushLog(notification: item.source, token: item.token, app: item.appID,
                                                   failure: why))
        loopQueue.counts.countFailed()
        if let receipt = item.receipt { queue.finish(receipt, deadToken: nil, feedback: loopQueue.path.feedback.store) }
    }
}
