import APNs
import Delivery
import EventLoop
import Feedback
import Fleet
import Locking
import ProviderAPI
import Provisioning
import RelayCore
import Synchronization

/// The asynchronous `/api/push` of a fleet (`REDIS_URL`): the accept path
/// adds to the stream `FleetKeys.asyncStream` (`StreamQueue`, bounded by
/// `API_ASYNC_MAX_PENDING` across the fleet); every instance reads it in
/// the consumer group and delivers what it reads (`FleetAsyncDelivery`).
public final class FleetAsyncQueue: AsyncSharedQueue {
    public let stream: StreamQueue
    private let fleet: Fleet

    public init(fleet: Fleet, maxPending: Int, capacity: Int, log: @escaping StreamQueue.Log,
                receive: @escaping StreamQueue.Receive) {
        self.fleet = fleet
        stream = StreamQueue(fleet: fleet, stream: FleetKeys.asyncStream, maxPending: maxPending, capacity: capacity,
                             log: log, receive: receive)
    }

    public func add(_ items: [AsyncQueuedNotification],
                    completion: @escaping @Sendable (AsyncSharedAddResult) -> Void) {
        // Down: refused at once, rather than after the command timeout (a
        // sender's request would wait 5 s for its 503).
        guard fleet.commands.isConnected else { return completion(.failed("Redis is not connected")) }
        stream.add(items.map(\.fields)) { result in
            switch result {
            case .added: completion(.added)
            case .full: completion(.full)
            case .failed(let error): completion(.failed(error.description))
            }
        }
    }

    public var length: Int { stream.length }
    public var claimed: Int { stream.claimed }
}

/// Delivers what this instance reads from the fleet's stream: each entry
/// decoded (a bad one is a log line naming its id and field, counted
/// failed, acknowledged and dropped), handed to a loop in turn, and tried
/// through that loop's `DeliveryPath` by an `AsyncDeliveryQueue` of its own
/// (the retry policy, the final failure's log to the hook, a dead token to
/// feedback, as in the in-process queue); acknowledged when done.
///
/// The app is looked up by id on the loop at delivery time, in this
/// instance's apps (configured, then provisioned). An app unknown here is
/// tried again after the policy's backoff, up to `API_ASYNC_MAX_TRIES`
/// (during a rolling change of the apps file, instances differ for a
/// while), then fails for good: a failed-push log to the hook, no APNs
/// request.
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

    /// One loop's part: confined to its loop.
    final class LoopUnit {
        let queue: AsyncDeliveryQueue
        let context: LoopContext
        let provisioned: ProvisionedApps
        let feedback: FeedbackSink
        let policy: AsyncRetryPolicy
        let counts: AsyncDeliveryCounts
        let bound: AsyncPendingBound
        let ack: @Sendable (String) -> Void
        let schedule: AsyncDeliveryQueue.Schedule

        init(queue: AsyncDeliveryQueue, context: LoopContext, provisioned: ProvisionedApps, feedback: FeedbackSink,
             policy: AsyncRetryPolicy, counts: AsyncDeliveryCounts, bound: AsyncPendingBound,
             ack: @escaping @Sendable (String) -> Void, schedule: @escaping AsyncDeliveryQueue.Schedule) {
            (self.queue, self.context, self.provisioned, self.feedback) = (queue, context, provisioned, feedback)
            (self.policy, self.counts, self.bound, self.ack, self.schedule) = (policy, counts, bound, ack, schedule)
        }

        /// Fails for good, not tried: every holder stopped with it.
        func giveUp(_ id: String, _ queued: AsyncQueuedNotification, deliveries: Int) {
            fail(id, queued, why: "given up after \(deliveries) deliveries: every relay instance that took it "
                 + "stopped before finishing it")
        }

        func deliver(_ id: String, _ queued: AsyncQueuedNotification) {
            guard let app = context.apps.app(for: .id(queued.appID)) ?? provisioned.app(id: queued.appID) else {
                return unknownApp(id, queued)
            }
            guard var item = queued.notification(app: app) else {
                return fail(id, queued, why: "app \(app.id) does not serve \(queued.environment.rawValue)")
            }
            item.receipt = id
            _ = bound.reserve(1)
            queue.enqueue(item)
        }

        private func unknownApp(_ id: String, _ queued: AsyncQueuedNotification) {
            var queued = queued
            queued.tries += 1
            guard queued.tries < policy.maxTries else {
                return fail(id, queued, why: "no app \(queued.appID)")
            }
            counts.countRetried()
            var random = SystemRandomNumberGenerator()
            let delay = policy.jitteredDelay(afterFailedTries: queued.tries, random: &random)
            schedule(delay) { [self] in deliver(id, queued) }
        }

        private func fail(_ id: String, _ queued: AsyncQueuedNotification, why: String) {
            feedback.post(FailedPushLog(notification: queued.source, token: queued.token, app: queued.appID,
                                        failure: why))
            counts.countFailed()
            ack(id)
        }
    }

    public let queue: FleetAsyncQueue
    private let units = Locked<(PerLoop<LoopUnit>, AsyncDeliveryCounts)?>(nil)
    private let next = Atomic<Int>(0)
    private let stopping = StopFlag()
    private let log: StreamQueue.Log

    /// Makes the queue (`add` works at once); `start` begins delivering.
    /// `capacity`: entries this instance holds at most.
    public init(fleet: Fleet, maxPending: Int, capacity: Int, log: @escaping StreamQueue.Log) {
        self.log = log
        let box = Locked<FleetAsyncDelivery?>(nil)
        queue = FleetAsyncQueue(fleet: fleet, maxPending: maxPending, capacity: capacity, log: log) { entries, _ in
            box.withLock { $0 }?.receive(entries)
        }
        box.withLock { $0 = self }
    }

    /// Starts reading, with a unit on each loop delivering through a path
    /// of `deliveries` (the API listener's `MAX_IN_FLIGHT`).
    public func start(pushes: AsyncPushes, loopContexts: LoopContexts, provisioned: ProvisionedApps,
                      feedback: FeedbackSink, deliveries: InFlightDeliveries) {
        let stopping = stopping
        let ack: @Sendable (String) -> Void = { [queue] id in queue.stream.done(id) }
        let made = PerLoop(loops: loopContexts.all.map(\.loop)) { loop in
            let context = loopContexts.value(on: loop)
            let path = DeliveryPath(sender: context.sender, counters: deliveries, feedback: feedback)
            let metrics = context.providerMetrics
            let schedule: AsyncDeliveryQueue.Schedule = { milliseconds, action in
                // Stopping: no retry starts; the entry stays pending in Redis.
                guard !stopping.isSet else { return }
                _ = loop.schedule(after: .milliseconds(milliseconds)) {
                    if !stopping.isSet { action() }
                }
            }
            // Holds what this loop's queue holds; never full (the stream
            // queue's `capacity` bounds what is read).
            let bound = AsyncPendingBound(maxPending: Int.max / 2)
            let queue = AsyncDeliveryQueue(path: path, policy: pushes.policy, bound: bound, counts: pushes.counts,
                                           feedback: feedback, done: { item, outcome in
                metrics?.countNotification(app: item.app.id, environment: item.notification.environment,
                                           outcome: outcome)
                if let receipt = item.receipt { ack(receipt) }
            }, schedule: schedule)
            return LoopUnit(queue: queue, context: context, provisioned: provisioned, feedback: feedback,
                            policy: pushes.policy, counts: pushes.counts, bound: bound, ack: ack, schedule: schedule)
        }
        units.withLock { $0 = (made, pushes.counts) }
        queue.stream.start()
    }

    /// Shutdown: no more reads, claims or retries.
    public func stop() {
        stopping.set()
        queue.stream.stop()
    }

    private func receive(_ entries: [StreamEntry]) {
        guard let (units, counts) = units.withLock({ $0 }) else { return }
        // Each entry with the deliveries it is given up after, nil to deliver.
        var perLoop = [[(String, AsyncQueuedNotification, givenUpAfter: Int?)]](repeating: [], count: units.all.count)
        for entry in entries {
            do throws(AsyncQueuedNotification.DecodingError) {
                guard let fields = entry.fields else {
                    throw AsyncQueuedNotification.DecodingError(field: "-", problem: "no fields")
                }
                let queued = try AsyncQueuedNotification(fields: fields)
                var givenUpAfter: Int?
                if let deliveries = entry.deliveries, deliveries > Self.maxDeliveries {
                    givenUpAfter = deliveries
                    log("async stream: entry \(entry.id) given up after \(deliveries) deliveries (every instance "
                        + "that took it stopped before finishing it: a crash?); it goes to the hook as failed")
                }
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % perLoop.count
                perLoop[index].append((entry.id, queued, givenUpAfter))
            } catch {
                log("async stream: entry \(entry.id) dropped: \(error)")
                counts.countFailed()
                queue.stream.done(entry.id)
            }
        }
        for (index, batch) in perLoop.enumerated() where !batch.isEmpty {
            let (loop, unit) = units.all[index]
            let box = UnsafeBox((unit, batch))
            loop.execute {
                let (unit, batch) = box.value
                for (id, queued, givenUpAfter) in batch {
                    if let givenUpAfter {
                        unit.giveUp(id, queued, deliveries: givenUpAfter)
                    } else {
                        unit.deliver(id, queued)
                    }
                }
            }
        }
    }
}

/// A loop's unit and its batch, crossing to that loop, which alone uses them.
private struct UnsafeBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Set once at shutdown, read by every loop's retry timers.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
