import APNsCore
import Delivery
import FCMCore
import Feedback
import RelayCore

/// One event loop's queue of asynchronous notifications: each is tried
/// through the loop's `DeliveryPath` of its service, APNs or FCM (so the end of every try records the
/// app's health, as in sync mode), then `AsyncRetryPolicy` decides; a retry
/// waits on a loop timer. A final failure's log goes to the hook once, and
/// its dead token to the feedback list (both handed back by the path:
/// `HookPosting.everyFailureToCaller`): in-process into the sink's store,
/// as in sync mode; a fleet's notification with its acknowledgement
/// (`AsyncSharedQueue.finish`), so its entry never leaves the stream while
/// its dead token waits in this instance's memory. In-process, every notification
/// holds a place of `AsyncPendingBound`, reserved by the request that
/// brought it and given back when it is done; a fleet's queue bounds what
/// is pending itself, and its notifications hold no place here.
///
/// In-process: what is queued lives in this process's memory and is lost
/// on a crash, like gorush's local queue. Thread-confined to its loop, like
/// the delivery path; made by `AsyncPushes.makeQueue`, the one place that
/// knows the loop's timers (`schedule`) and what a notification's end
/// tells (`done`); tests inject both, and the clock (`now`).
public final class AsyncDeliveryQueue {
    /// Runs `action` on this loop after `milliseconds`.
    typealias Schedule = (_ milliseconds: Int64, _ action: @escaping () -> Void) -> Void
    /// Told of each notification done, with its last try's outcome (the
    /// route's metrics: one count per notification, as in sync mode).
    public typealias Done = (_ item: AsyncNotification, _ outcome: AsyncOutcome) -> Void

    let path: DeliveryPath<APNsPush>
    /// The loop's FCM path; nil: the loop has no FCM client (an Android
    /// token is then never queued here: the accept path and the fleet's
    /// reader check first).
    let fcmPath: DeliveryPath<FCMPush>?
    let policy: AsyncRetryPolicy
    /// Nil: the notifications hold no place here (a fleet's queue holds
    /// API_ASYNC_MAX_PENDING itself).
    let bound: AsyncPendingBound?
    let counts: AsyncDeliveryCounts
    /// This loop's apps by id, configured then provisioned: where a fleet's
    /// notification finds its app when it is delivered.
    let apps: (_ id: String) -> RelayApp?
    let schedule: Schedule
    let now: () -> Int64
    let done: Done
    /// With a fleet: the queue a notification with a receipt came from,
    /// which its end finishes.
    let shared: (any AsyncSharedQueue)?
    var random: any RandomNumberGenerator
    /// Retries waiting for their time, by a key of this queue's.
    private var waiting: [Int: (AsyncNotification, RelayApp)] = [:]
    private var nextKey = 0

    init(path: DeliveryPath<APNsPush>, fcmPath: DeliveryPath<FCMPush>? = nil, policy: AsyncRetryPolicy,
         bound: AsyncPendingBound?, counts: AsyncDeliveryCounts,
         apps: @escaping (_ id: String) -> RelayApp?, random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
         now: @escaping () -> Int64 = FeedbackSink.unixMilliseconds, shared: (any AsyncSharedQueue)? = nil,
         done: @escaping Done, schedule: @escaping Schedule) {
        self.fcmPath = fcmPath
        (self.path, self.policy, self.bound, self.counts, self.apps) = (path, policy, bound, counts, apps)
        (self.random, self.now, self.shared, self.done, self.schedule) = (random, now, shared, done, schedule)
    }

    /// Retries waiting on this loop.
    public var waitingRetries: Int { waiting.count }

    /// Tries `item` now, for `app`, which can send it (`AsyncNotification.
    /// refusal(by:)`: the accept path and the fleet's reader check that
    /// first; an FCM notification also needs the loop's FCM path). In-process, its place
    /// in `bound` is the caller's reservation.
    public func enqueue(_ item: AsyncNotification, app: RelayApp) {
        attempt(item, app: app)
    }

    /// Shutdown: every waiting retry is tried now, once more, whatever its
    /// time, as its last: a failure now is final. Returns how many.
    @discardableResult
    public func retryAllNow() -> Int {
        let all = waiting.values
        waiting = [:]
        for (var item, app) in all {
            item.tries = max(item.tries, policy.maxTries - 1)
            attempt(item, app: app)
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
            bound?.release(count)
        }
        return count
    }

    private func attempt(_ item: AsyncNotification, app: RelayApp) {
        var item = item
        item.tries += 1
        counts.add(inFlight: 1)
        switch item.message {
        case .apns(let message):
            guard let request = message.request(for: app) else {
                preconditionFailure("AsyncDeliveryQueue: app \(app.id) does not serve \(message.environment.rawValue)")
            }
            send(item, app: app, request, through: path)
        case .fcm(let message):
            guard let fcmPath, let request = message.request(for: app) else {
                preconditionFailure("AsyncDeliveryQueue: app \(app.id) or this loop has no FCM")
            }
            send(item, app: app, request, through: fcmPath)
        }
    }

    /// One try of `item` through its service's path; `decide` hears its end.
    private func send<Service: AsyncPushService>(_ item: AsyncNotification, app: RelayApp,
                                                  _ request: Service.Notification, through path: DeliveryPath<Service>) {
        let recipient = Service.recipient(of: request)
        let start = path.deliver(request, app: app, token: item.token,
                                 posting: .everyFailureToCaller(item.failedPushSource)) { [weak self] delivery, log in
            guard let self else { return }
            self.counts.add(inFlight: -1)
            self.decide(item, app: app, delivery: delivery, Service.self, recipient: recipient, log: log)
        }
        if case .overloaded(let log) = start {
            counts.add(inFlight: -1)
            decide(item, app: app, delivery: Service.overloaded, Service.self, recipient: recipient, log: log)
        }
    }

    /// `item` is done: the route hears of it; a fleet's notification is
    /// finished in the fleet's queue, with `deadToken`, else `deadToken` is
    /// recorded here.
    private func end(_ item: AsyncNotification, _ outcome: AsyncOutcome, deadToken: FeedbackEntry?) {
        done(item, outcome)
        if let receipt = item.receipt, let shared {
            shared.finish(receipt, deadToken: deadToken, feedback: path.feedback.store)
        } else if let deadToken {
            path.feedback.record(deadToken)
        }
    }

    private func decide<Service: AsyncPushService>(_ item: AsyncNotification, app: RelayApp,
                                                    delivery: Service.Delivery, _: Service.Type,
                                                    recipient: Service.Recipient, log: FailedPushLog?) {
        let time = now()
        switch policy.decide(after: Service.result(of: delivery), tries: item.tries, expiration: item.expiration,
                             retryAfterSeconds: Service.retryAfterSeconds(of: delivery), now: time, random: &random) {
        case .done(.accepted):
            counts.countDelivered()
            bound?.release()
            end(item, Service.asyncOutcome(of: delivery), deadToken: nil)
        case .done:
            counts.countFailed()
            bound?.release()
            if let log { path.feedback.post(log) }
            end(item, Service.asyncOutcome(of: delivery),
                deadToken: Service.deadToken(in: delivery, recipient: recipient, app: app.id))
        case .retry(let at):
            counts.countRetried()
            let key = nextKey
            nextKey &+= 1
            waiting[key] = (item, app)
            schedule(max(0, at - time)) { [weak self] in
                // Gone when shutdown already tried or dropped it.
                guard let self, let (item, app) = self.waiting.removeValue(forKey: key) else { return }
                self.attempt(item, app: app)
            }
        }
    }
}
