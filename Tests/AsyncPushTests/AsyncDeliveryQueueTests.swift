import APNsCore
import Delivery
import Feedback
import FeedbackHook
import Observability
import HTTPCore
import RelayCore
import Testing

@testable import AsyncPush
import TestSupport

/// One loop's queue of asynchronous notifications, over a manual
/// `FakeSender` and a manual clock: tries, retries, the final end.
@Suite("The asynchronous delivery queue")
struct AsyncDeliveryQueueTests {
    final class Fixture {
        let sender = FakeSender()
        let fcmSender = FakeFCMSender()
        let store = FeedbackStore(maxPerApp: 10)
        let hook: FeedbackHook
        let bound = AsyncPendingBound(maxPending: 100)
        let counts = AsyncDeliveryCounts()
        /// With an FCM service account too (AsyncFCMDeliveryQueueTests).
        let app: RelayApp
        var time: Int64 = 1_800_000_000_000
        /// Timers waiting: (due time, action).
        var timers: [(Int64, () -> Void)] = []
        var queue: AsyncDeliveryQueue!
        /// The outcomes the queue reported done, in order.
        var doneOutcomes: [AsyncOutcome] = []

        init(maxTries: Int = 3, maxInFlight: Int = 10, shared: (any AsyncSharedQueue)? = nil) throws {
            var app = RelayApp(id: "toot", topic: "cx.c3.toot")
            app.fcm = FCMAppCredentials(account: FCMTestAccount.make(project: "toot"), health: AppHealth())
            self.app = app
            // A hook already shut down counts each post as dropped: the
            // count is the number of posts, with no server.
            hook = try FeedbackHook(url: "http://127.0.0.1:9/hook", headers: [], queueCapacity: 10,
                                    timeout: .seconds(1), maxAttempts: 1, backoff: .zero,
                                    logger: Logger(level: .warning) { _ in })
            hook.shutdown(within: .zero)
            let sink = FeedbackSink(store: store, hook: hook)
            let counters = InFlightDeliveries(maxInFlight: maxInFlight)
            let path = DeliveryPath(service: APNsPush(sender: sender), counters: counters, feedback: sink)
            let fcmPath = DeliveryPath(service: FCMPush(sender: fcmSender), counters: counters, feedback: sink)
            queue = AsyncDeliveryQueue(path: path, fcmPath: fcmPath, policy: AsyncRetryPolicy(maxTries: maxTries),
                                       bound: bound, counts: counts, apps: { _ in nil }, random: LowestJitter(),
                                       now: { [unowned self] in self.time }, shared: shared,
                                       done: { [unowned self] _, outcome in self.doneOutcomes.append(outcome) }) {
                [unowned self] delay, action in
                self.timers.append((self.time + delay, action))
            }
        }

        static let token = String(repeating: "ab", count: 32)

        func item(expiration: Int64? = nil) -> AsyncNotification {
            var fields = [HTTPField(name: "apns-push-type", value: "alert")]
            if let expiration { fields.append(HTTPField(name: "apns-expiration", value: String(expiration))) }
            return AsyncNotification(appID: app.id, environment: .production, token: Fixture.token,
                                     deviceToken: Fixture.token, headers: fields, payload: Array("{}".utf8),
                                     apnsID: "ID", source: nil, acceptedAt: time)
        }

        /// Accepts one notification as a request would: its place, then the queue.
        func accept(_ item: AsyncNotification) {
            #expect(bound.reserve(1))
            queue.enqueue(item, app: app)
        }

        /// Moves the clock to the first timer's time and runs every timer due.
        func runDueTimers() {
            guard let next = timers.map(\.0).min() else { return }
            time = max(time, next)
            let due = timers.filter { $0.0 <= time }
            timers.removeAll { $0.0 <= time }
            for (_, action) in due { action() }
        }

        var hookPosts: Int { hook.counts.dropped }
    }

    static let unavailable = DeliveryOutcome.apns(status: 503, reason: .serviceUnavailable, apnsID: nil)
    static let accepted = DeliveryOutcome.apns(status: 200, reason: nil, apnsID: nil)

    @Test("a notification APNs accepts at once is delivered, its place given back, nothing posted")
    func acceptedAtOnce() throws {
        let fixture = try Fixture()
        fixture.accept(fixture.item())
        #expect(fixture.counts.inFlight == 1)
        fixture.sender.complete(with: Self.accepted)
        #expect(fixture.counts.delivered == 1)
        #expect(fixture.counts.inFlight == 0)
        #expect(fixture.bound.pending == 0)
        #expect(fixture.hookPosts == 0)
        #expect(fixture.timers.isEmpty)
    }

    @Test("a 503 is tried again after the backoff and delivered once APNs accepts it; the hook hears nothing")
    func retriedThenDelivered() throws {
        let fixture = try Fixture()
        let start = fixture.time
        fixture.accept(fixture.item())
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.counts.retried == 1)
        #expect(fixture.queue.waitingRetries == 1)
        #expect(fixture.bound.pending == 1, "a notification waiting for its retry keeps its place")
        #expect(fixture.timers.map(\.0) == [start + 500])
        fixture.runDueTimers()
        #expect(fixture.sender.sent.count == 2)
        fixture.sender.complete(with: Self.accepted)
        #expect(fixture.counts.delivered == 1)
        #expect(fixture.counts.failed == 0)
        #expect(fixture.bound.pending == 0)
        #expect(fixture.hookPosts == 0)
        #expect(fixture.doneOutcomes == [.apns(Self.accepted)], "done once, with the last try's outcome")
    }

    @Test("APNs' Retry-After holds the retry back that long, beyond the backoff")
    func retryAfterIsHonoured() throws {
        let fixture = try Fixture()
        let start = fixture.time
        fixture.accept(fixture.item())
        fixture.sender.complete(with: APNsDelivery(outcome: Self.unavailable, retryAfterSeconds: 20))
        #expect(fixture.timers.map(\.0) == [start + 20_000])
        fixture.runDueTimers()
        #expect(fixture.sender.sent.count == 2)
        // The next answer has none: the backoff alone decides (second try: 1-2 s).
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.timers.map(\.0) == [start + 20_000 + 1_000])
    }

    @Test("a notification whose tries are spent fails once: one hook post, its place given back")
    func triesSpent() throws {
        let fixture = try Fixture(maxTries: 3)
        fixture.accept(fixture.item())
        for _ in 0..<2 {
            fixture.sender.complete(with: Self.unavailable)
            fixture.runDueTimers()
        }
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.sender.sent.count == 3)
        #expect(fixture.counts.retried == 2)
        #expect(fixture.counts.failed == 1)
        #expect(fixture.doneOutcomes == [.apns(Self.unavailable)])
        #expect(fixture.hookPosts == 1)
        #expect(fixture.bound.pending == 0)
        #expect(fixture.timers.isEmpty)
    }

    @Test("a dead token is final at once: into the feedback list and to the hook")
    func deadToken() throws {
        let fixture = try Fixture()
        fixture.accept(fixture.item())
        fixture.sender.complete(with: .apns(status: 410, reason: .unregistered, apnsID: nil))
        #expect(fixture.store.take(app: "toot").map(\.token) == [Fixture.token])
        #expect(fixture.hookPosts == 1)
        #expect(fixture.counts.failed == 1)
        #expect(fixture.counts.retried == 0)
        #expect(fixture.bound.pending == 0)
    }

    /// A fleet's queue that records what it was told to finish.
    final class FinishedQueue: AsyncSharedQueue, @unchecked Sendable {
        var finished: [(receipt: String, deadToken: FeedbackEntry?, feedback: FeedbackStore)] = []
        func add(_ items: [AsyncNotification], completion: @escaping @Sendable (AsyncSharedAddResult) -> Void) {}
        func finish(_ receipt: String, deadToken: FeedbackEntry?, feedback: FeedbackStore) {
            finished.append((receipt, deadToken, feedback))
        }
        var length: Int { 0 }
        var claimed: Int { 0 }
    }

    @Test("a fleet's notification hands its dead token to its acknowledgement, not to this instance's store", arguments: [
        (outcome: DeliveryOutcome.apns(status: 410, reason: .unregistered, apnsID: nil), dead: "Unregistered"),
        (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), "BadDeviceToken"),
        (.apns(status: 400, reason: .badTopic, apnsID: nil), nil),
        (.apns(status: 200, reason: nil, apnsID: nil), nil),
    ] as [(outcome: DeliveryOutcome, dead: String?)])
    func fleetDeadTokenGoesWithTheAcknowledgement(_ example: (outcome: DeliveryOutcome, dead: String?)) throws {
        let shared = FinishedQueue()
        let fixture = try Fixture(shared: shared)
        var item = fixture.item()
        item.receipt = "1-1"
        fixture.accept(item)
        fixture.sender.complete(with: example.outcome)
        #expect(shared.finished.count == 1)
        let finished = try #require(shared.finished.first)
        #expect(finished.receipt == "1-1" && finished.feedback === fixture.store)
        #expect(finished.deadToken?.reason == example.dead)
        #expect(finished.deadToken.map { [$0.app, $0.token] } ?? [] == (example.dead == nil ? [] : ["toot", Fixture.token]))
        #expect(fixture.store.take(app: "toot").isEmpty)
        #expect(fixture.store.counts(app: "toot") == FeedbackCounts())
    }

    @Test("apns-expiration 0 is tried once: a 503 is final")
    func expirationZero() throws {
        let fixture = try Fixture()
        fixture.accept(fixture.item(expiration: 0))
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.counts.failed == 1)
        #expect(fixture.hookPosts == 1)
        #expect(fixture.timers.isEmpty)
    }

    @Test("over MAX_IN_FLIGHT the try is retried later, not failed")
    func overloadedIsRetried() throws {
        let fixture = try Fixture(maxInFlight: 1)
        fixture.accept(fixture.item())
        fixture.accept(fixture.item())
        #expect(fixture.sender.sent.count == 1)
        #expect(fixture.counts.retried == 1)
        #expect(fixture.counts.inFlight == 1)
        fixture.sender.complete(with: Self.accepted)
        fixture.runDueTimers()
        fixture.sender.complete(with: Self.accepted)
        #expect(fixture.counts.delivered == 2)
        #expect(fixture.bound.pending == 0)
    }

    @Test("at shutdown the waiting retries are tried at once, as their last try")
    func retryAllNow() throws {
        let fixture = try Fixture(maxTries: 5)
        fixture.accept(fixture.item())
        fixture.accept(fixture.item())
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.queue.waitingRetries == 2)
        #expect(fixture.queue.retryAllNow() == 2)
        #expect(fixture.queue.waitingRetries == 0)
        #expect(fixture.sender.pendingCount == 2)
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.counts.failed == 2, "a failure of the last try is final")
        #expect(fixture.hookPosts == 2)
        #expect(fixture.bound.pending == 0)
        // The timers of the retries already tried do nothing.
        fixture.runDueTimers()
        #expect(fixture.sender.sent.count == 4)
    }

    @Test("retries dropped at exit are counted failed and give their places back")
    func dropWaiting() throws {
        let fixture = try Fixture()
        fixture.accept(fixture.item())
        fixture.sender.complete(with: Self.unavailable)
        #expect(fixture.queue.dropWaiting() == 1)
        #expect(fixture.counts.failed == 1)
        #expect(fixture.bound.pending == 0)
        fixture.runDueTimers()
        #expect(fixture.sender.sent.count == 1)
    }
}
