import Delivery
import FCMCore
import RelayCore
import Testing
import TestSupport

@testable import AsyncPush

/// The asynchronous queue delivering Android tokens' notifications
/// through the loop's FCM path, as it does iOS ones through APNs: the same
/// retries, the same final end.
@Suite("The asynchronous delivery queue with FCM")
struct AsyncFCMDeliveryQueueTests {
    typealias Fixture = AsyncDeliveryQueueTests.Fixture

    static let token = "cXyz_-1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    /// Accepts one Android token's notification as a request would.
    static func accept(_ fixture: Fixture, receipt: String? = nil) {
        var item = AsyncNotification(appID: fixture.app.id, token: token,
                                     message: .fcm(.init(token: FCMToken(token)!, body: Array("{}".utf8))),
                                     source: .init(id: "n", platform: 2, message: "m"), acceptedAt: fixture.time)
        item.receipt = receipt
        fixture.accept(item)
    }

    static let sent = FCMOutcome.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)
    static func failed(_ status: Int, _ reason: FCMReason, retryAfter: Int? = nil) -> FCMOutcome {
        .answered(.failed(FCMError(httpStatus: status, reason: reason)), retryAfterSeconds: retryAfter,
                  afterTokenRefresh: false)
    }

    @Test("an FCM message goes with the app's service account; accepted at once, its place given back")
    func acceptedAtOnce() throws {
        let fixture = try Fixture()
        Self.accept(fixture)
        let sent = try #require(fixture.fcmSender.sent.first)
        #expect(sent.account.projectID == "toot" && sent.token.text == Self.token)
        #expect(fixture.sender.sent.isEmpty)
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
        Self.accept(fixture)
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
        Self.accept(fixture)
        fixture.fcmSender.complete(with: Self.failed(429, .quotaExceeded))
        #expect(fixture.timers.map(\.0) == [start + 60_000])
    }

    @Test("tries spent on FCM's 500s: failed once, one hook post, its place given back")
    func triesSpent() throws {
        let fixture = try Fixture(maxTries: 3)
        Self.accept(fixture)
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
        Self.accept(fixture)
        fixture.fcmSender.complete(with: Self.failed(404, .unregistered))
        let entries = fixture.store.take(app: "toot")
        #expect(entries.map(\.token) == [Self.token])
        #expect(entries.first?.platform == .android && entries.first?.reason == "UNREGISTERED")
        #expect(fixture.hookPosts == 1)
        #expect(fixture.counts.failed == 1 && fixture.counts.retried == 0)
    }

    @Test("a fleet's Android notification hands its dead token to its acknowledgement")
    func fleetDeadToken() throws {
        let shared = AsyncDeliveryQueueTests.FinishedQueue()
        let fixture = try Fixture(shared: shared)
        Self.accept(fixture, receipt: "1-2")
        fixture.fcmSender.complete(with: Self.failed(403, .senderIDMismatch))
        let finished = try #require(shared.finished.first)
        #expect(finished.receipt == "1-2")
        #expect(finished.deadToken?.platform == .android)
        #expect(finished.deadToken?.token == Self.token && finished.deadToken?.reason == "SENDER_ID_MISMATCH")
        #expect(fixture.store.take(app: "toot").isEmpty)
    }
}
