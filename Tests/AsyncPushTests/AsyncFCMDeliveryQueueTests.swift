import APNsCore
import Delivery
import FCMCore
import Feedback
import FeedbackHook
import Observability
import RelayCore
import Testing
import TestSupport

@testable import AsyncPush

/// The asynchronous queue delivering Android tokens' notifications
/// through the loop's FCM path, as it does iOS ones through APNs: the same
/// retries, the same final end.
@Suite("The asynchronous delivery queue with FCM")
struct AsyncFCMDeliveryQueueTests {
    final class Fixture {
        let apnsSender = FakeSender()
        let fcmSender = FakeFCMSender()
        let store = FeedbackStore(maxPerApp: 10)
        let hook: FeedbackHook
        let bound = AsyncPendingBound(maxPending: 100)
        let counts = AsyncDeliveryCounts()
        let app: RelayApp
        var time: Int64 = 1_800_000_000_000
        var timers: [(Int64, () -> Void)] = []
        var queue: AsyncDeliveryQueue!
        var doneOutcomes: [AsyncOutcome] = []

        static let token = "cXyz_-1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

        init(maxTries: Int = 3, shared: (any AsyncSharedQueue)? = nil) throws {
            var app = RelayApp(id: "droid", topic: "", production: nil, development: nil)
            app.fcm = FCMAppCredentials(account: FCMTestAccount.make(project: "droid"), health: AppHealth())
            self.app = app
            hook = try FeedbackHook(url: "http://127.0.0.1:9/hook", headers: [], queueCapacity: 10,
                                    timeout: .seconds(1), maxAttempts: 1, backoff: .zero,
                                    logger: Logger(level: .warning) { _ in })
            hook.shutdown(within: .zero)
            let sink = FeedbackSink(store: store, hook: hook)
            let counters = InFlightDeliveries(maxInFlight: 10)
            queue = AsyncDeliveryQueue(
                path: DeliveryPath(service: APNsPush(sender: apnsSender), counters: counters, feedback: sink),
                fcmPath: DeliveryPath(service: FCMPush(sender: fcmSender), counters: counters, feedback: sink),
                policy: AsyncRetryPolicy(maxTries: maxTries), bound: bound, counts: counts, apps: { _ in nil },
                random: LowestJitter(), now: { [unowned self] in self.time }, shared: shared,
                done: { [unowned self] _, outcome in self.doneOutcomes.append(outcome) }) { [unowned self] delay, action in
                self.timers.append((self.time + delay, action))
            }
        }

        func accept(receipt: String? = nil) {
            var item = AsyncNotification(appID: app.id, token: Self.token,
                                         message: .fcm(.init(token: FCMToken(Self.token)!, body: Array("{}".utf8))),
                                         source: .init(id: "n", platform: 2, message: "m"), acceptedAt: time)
            item.receipt = receipt
            #expect(bound.reserve(1))
            queue.enqueue(item, app: app)
        }

        func runDueTimers() {
            guard let next = timers.map(\.0).min() else { return }
            time = max(time, next)
            let due = timers.filter { $0.0 <= time }
            timers.removeAll { $0.0 <= time }
            for (_, action) in due { action() }
        }

        var hookPosts: Int { hook.counts.dropped }
    }

    static let sent = FCMOutcome.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
    static func failed(_ status: Int, _ reason: FCMReason, retryAfter: Int? = nil) -> FCMOutcome {
        .answered(.failed(FCMError(httpStatus: status, reason: reason)), retryAfterSeconds: retryAfter,
                  afterTokenRefresh: false)
    }

    @Test("an FCM message goes with the app's service account; accepted at once, its place given back")
    func acceptedAtOnce() throws {
        let fixture = try Fixture()
        fixture.accept()
        let sent = try #require(fixture.fcmSender.sent.first)
        #expect(sent.account.projectID == "droid" && sent.token.text == Fixture.token)
        #expect(fixture.apnsSender.sent.isEmpty)
        fixture.fcmSender.complete(with: Self.sent)
        #expect(fixture.counts.delivered == 1)
        #expect(fixture.bound.pending == 0)
        #expect(fixture.hookPosts == 0)
        #expect(fixture.doneOutcomes == [.fcm(Self.sent)])
    }

    @Test("FCM's 503 is tried again after its Retry-After, then delivered; the hook hears nothing")
    func retriedAfterFCMsWait() throws {
        let fixture = try Fixture()
        let start = fixture.time
        fixture.accept()
        fixture.fcmSender.complete(with: Self.failed(503, .unavailable, retryAfter: 7))
        #expect(fixture.counts.retried == 1)
        #expect(fixture.timers.map(\.0) == [start + 7_000])
        fixture.runDueTimers()
        #expect(fixture.fcmSender.sent.count == 2)
        fixture.fcmSender.complete(with: Self.sent)
        #expect(fixture.counts.delivered == 1 && fixture.counts.failed == 0)
        #expect(fixture.hookPosts == 0)
    }

    @Test("a 429 without Retry-After waits FCM's 60 s")
    func quotaWaitsAMinute() throws {
        let fixture = try Fixture()
        let start = fixture.time
        fixture.accept()
        fixture.fcmSender.complete(with: Self.failed(429, .quotaExceeded))
        #expect(fixture.timers.map(\.0) == [start + 60_000])
    }

    @Test("tries spent on FCM's 500s: failed once, one hook post, its place given back")
    func triesSpent() throws {
        let fixture = try Fixture(maxTries: 3)
        fixture.accept()
        for _ in 0..<2 {
            fixture.fcmSender.complete(with: Self.failed(500, .internalError))
            fixture.runDueTimers()
        }
        fixture.fcmSender.complete(with: Self.failed(500, .internalError))
        #expect(fixture.fcmSender.sent.count == 3)
        #expect(fixture.counts.retried == 2 && fixture.counts.failed == 1)
        #expect(fixture.hookPosts == 1)
        #expect(fixture.bound.pending == 0)
    }

    @Test("a dead Android token is final at once: into the feedback list as android, to the hook")
    func deadToken() throws {
        let fixture = try Fixture()
        fixture.accept()
        fixture.fcmSender.complete(with: Self.failed(404, .unregistered))
        let entries = fixture.store.take(app: "droid")
        #expect(entries.map(\.token) == [Fixture.token])
        #expect(entries.first?.platform == .android && entries.first?.reason == "UNREGISTERED")
        #expect(fixture.hookPosts == 1)
        #expect(fixture.counts.failed == 1 && fixture.counts.retried == 0)
    }

    @Test("a fleet's Android notification hands its dead token to its acknowledgement")
    func fleetDeadToken() throws {
        let shared = AsyncDeliveryQueueTests.FinishedQueue()
        let fixture = try Fixture(shared: shared)
        fixture.accept(receipt: "1-2")
        fixture.fcmSender.complete(with: Self.failed(403, .senderIDMismatch))
        let finished = try #require(shared.finished.first)
        #expect(finished.receipt == "1-2")
        #expect(finished.deadToken?.platform == .android)
        #expect(finished.deadToken?.token == Fixture.token && finished.deadToken?.reason == "SENDER_ID_MISMATCH")
        #expect(fixture.store.take(app: "droid").isEmpty)
    }
}
