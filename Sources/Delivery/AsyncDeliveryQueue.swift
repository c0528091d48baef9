import APNs
import Feedback
import RelayCore
import Synchronization

/// One notification an asynchronous `/api/push` accepted: a value, with
/// what the next try needs and what the policy decides on. `tries` counts
/// the tries made; `acceptedAt` is when the request was answered 200
/// (milliseconds since the epoch).
public struct AsyncNotification: Sendable {
    public var notification: APNsNotification
    public var app: RelayApp
    /// The device token as the sender wrote it (the failed-push log's).
    public var token: String
    /// What the token's failed-push log names besides the token.
    public var source: FailedPushSource
    /// `apns-expiration` of the request, seconds since the epoch; nil: none.
    public var expiration: Int64?
    public var tries: Int
    public var acceptedAt: Int64
    /// Where a shared queue holds it (a stream entry's id), to acknowledge
    /// when done; nil in the in-process queue.
    public var receipt: String?

    public init(notification: APNsNotification, app: RelayApp, token: String, source: FailedPushSource,
                acceptedAt: Int64) {
        (self.notification, self.app, self.token, self.source) = (notification, app, token, source)
        expiration = notification.headers.first { $0.name == "apns-expiration" }.flatMap { Int64($0.value) }
        tries = 0
        self.acceptedAt = acceptedAt
    }
}

/// The asynchronous notifications' counts over the process: the gauges
/// and counters of `toot_relay_api_async_*`. Lock-free, shared by every
/// loop's queue.
public final class AsyncDeliveryCounts: Sendable {
    private let inFlightCount = Atomic<Int>(0)
    private let deliveredCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)
    private let retriedCount = Atomic<Int>(0)

    public init() {}

    /// Tries sent to APNs, not yet answered.
    public var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
    /// Notifications APNs accepted.
    public var delivered: Int { deliveredCount.load(ordering: .relaxed) }
    /// Notifications done without APNs' acceptance (refused, expired, tries
    /// spent, or left at exit).
    public var failed: Int { failedCount.load(ordering: .relaxed) }
    /// Tries scheduled again.
    public var retried: Int { retriedCount.load(ordering: .relaxed) }

    func add(inFlight: Int) { inFlightCount.wrappingAdd(inFlight, ordering: .relaxed) }
    func countDelivered() { deliveredCount.wrappingAdd(1, ordering: .relaxed) }
    public func countFailed(_ count: Int = 1) { failedCount.wrappingAdd(count, ordering: .relaxed) }
    public func countRetried() { retriedCount.wrappingAdd(1, ordering: .relaxed) }
}

/// One event loop's queue of asynchronous notifications: each is tried
/// through the loop's `DeliveryPath` (so the end of every try records the
/// app's health and a dead token, as in sync mode), then `AsyncRetryPolicy`
/// decides; a retry waits on a loop timer. A final failure's log goes to
/// the hook once (the tries' logs are handed back unposted:
/// `HookPosting.everyFailureToCaller`). Every notification holds a place of
/// `AsyncPendingBound`, reserved by the request that brought it and given
/// back when it is done.
///
/// In-process: what is queued lives in this process's memory and is lost
/// on a crash, like gorush's local queue. Thread-confined to its loop, like
/// the delivery path; `schedule` and `now` are the loop's (injected, so
/// tests drive time).
public final class AsyncDeliveryQueue {
    /// Runs `action` on this loop after `milliseconds`.
    public typealias Schedule = (_ milliseconds: Int64, _ action: @escaping () -> Void) -> Void
    /// Told of each notification done, with its last try's outcome (the
    /// route's metrics: one count per notification, as in sync mode).
    public typealias Done = (_ item: AsyncNotification, _ outcome: DeliveryOutcome) -> Void

    let path: DeliveryPath
    let policy: AsyncRetryPolicy
    let bound: AsyncPendingBound
    let counts: AsyncDeliveryCounts
    let feedback: FeedbackSink
    let schedule: Schedule
    let now: () -> Int64
    let done: Done?
    var random: any RandomNumberGenerator
    /// Retries waiting for their time, by a key of this queue's.
    private var waiting: [Int: AsyncNotification] = [:]
    private var nextKey = 0

    public init(path: DeliveryPath, policy: AsyncRetryPolicy, bound: AsyncPendingBound, counts: AsyncDeliveryCounts,
                feedback: FeedbackSink, random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
                now: @escaping () -> Int64 = FeedbackSink.unixMilliseconds, done: Done? = nil,
                schedule: @escaping Schedule) {
        (self.path, self.policy, self.bound, self.counts, self.feedback) = (path, policy, bound, counts, feedback)
        (self.random, self.now, self.done, self.schedule) = (random, now, done, schedule)
    }

    /// Retries waiting on this loop.
    public var waitingRetries: Int { waiting.count }

    /// Tries `item` now. Its place in `bound` is the caller's reservation.
    public func enqueue(_ item: AsyncNotification) {
        attempt(item)
    }

    /// Shutdown: every waiting retry is tried now, once more, whatever its
    /// time, as its last: a failure now is final. Returns how many.
    @discardableResult
    public func retryAllNow() -> Int {
        let all = waiting.values
        waiting = [:]
        for var item in all {
            item.tries = max(item.tries, policy.maxTries - 1)
            attempt(item)
        }
        return all.count
    }

    /// Gives up the retries still waiting (the process is exiting): each is
    /// counted failed and its place given back. Returns how many.
    @discardableResult
    public func dropWaiting() -> Int {
        let count = waiting.count
        waiting = [:]
        if count > 0 {
            counts.countFailed(count)
            bound.release(count)
        }
        return count
    }

    private func attempt(_ item: AsyncNotification) {
        var item = item
        item.tries += 1
        counts.add(inFlight: 1)
        let start = path.deliver(item.notification, app: item.app, token: item.token,
                                 posting: .everyFailureToCaller(item.source)) { [weak self] delivery, log in
            guard let self else { return }
            self.counts.add(inFlight: -1)
            self.decide(item, delivery: delivery, log: log)
        }
        if case .overloaded(let log) = start {
            counts.add(inFlight: -1)
            decide(item, delivery: APNsDelivery(outcome: .overloaded), log: log)
        }
    }

    private func decide(_ item: AsyncNotification, delivery: APNsDelivery, log: FailedPushLog?) {
        let time = now()
        switch policy.decide(after: delivery.outcome, tries: item.tries, expiration: item.expiration,
                             retryAfterSeconds: delivery.retryAfterSeconds, now: time, random: &random) {
        case .done(.accepted):
            counts.countDelivered()
            bound.release()
            done?(item, delivery.outcome)
        case .done:
            counts.countFailed()
            bound.release()
            if let log { feedback.post(log) }
            done?(item, delivery.outcome)
        case .retry(let at):
            counts.countRetried()
            let key = nextKey
            nextKey &+= 1
            waiting[key] = item
            schedule(max(0, at - time)) { [weak self] in
                // Gone when shutdown already tried or dropped it.
                guard let self, let item = self.waiting.removeValue(forKey: key) else { return }
                self.attempt(item)
            }
        }
    }
}
