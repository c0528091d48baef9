import APNsCore
import Testing
@testable import APNs

@Suite("APNs pool machine: answers about the provider token")
struct APNsPoolMachineTokenAnswerTests {
    static let second = PoolHarness.second

    static func answered(_ request: PooledNotification, _ status: Int, _ reason: APNsReason) -> APNsDelivery {
        APNsDelivery(outcome: .apns(status: status, reason: reason, apnsID: request.notification.apnsID))
    }

    static func unrelatedKey(_ request: PooledNotification) -> APNsDelivery {
        answered(request, 403, .unrelatedKeyIdInToken)
    }

    static func tooManyUpdates(_ request: PooledNotification) -> APNsDelivery {
        answered(request, 429, .tooManyProviderTokenUpdates)
    }

    @Test("403 UnrelatedKeyIdInToken: the connection drains and the request goes again on another, opened for it")
    func unrelatedKeyMovesToAnotherConnection() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst(3)
        #expect(pool.send(r[1]) == [.submit(r[1], on: c0)])
        #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [.drainConnection(c0), .scheduleDispatch])
        #expect(r[0].phase == .queued)
        #expect(r[0].resendCount == 1)
        #expect(!r[0].isCompleted)
        #expect(pool.machine.waitingCount == 1)
        #expect(pool.machine.inFlightCount == 1)
        // The draining connection takes nothing: another opens.
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        #expect(pool.send(r[2]) == [])
        // Another request answered so on the same connection: already draining.
        #expect(pool.finished(r[1], Self.unrelatedKey(r[1])) == [.scheduleDispatch])
        #expect(pool.ready(c1) == [.submit(r[0], on: c1), .submit(r[1], on: c1), .submit(r[2], on: c1)])
        #expect(pool.closed(c0) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted(r[0]))])
    }

    @Test("UnrelatedKeyIdInToken on every connection: the request goes again at most maxResends times, then that answer is its own")
    func unrelatedKeyResendLimit() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst()
        for attempt in 0..<APNsPoolMachine.maxResends {
            let connection = PoolConnectionID(rawValue: attempt)
            let next = PoolConnectionID(rawValue: attempt + 1)
            #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [.drainConnection(connection), .scheduleDispatch])
            #expect(pool.closed(connection) == [])
            #expect(pool.dispatchRan() == [.openConnection(next)])
            #expect(pool.ready(next) == [.submit(r[0], on: next)], "attempt \(attempt + 2)")
        }
        let last = PoolConnectionID(rawValue: APNsPoolMachine.maxResends)
        #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [
            .drainConnection(last), .complete(r[0], Self.unrelatedKey(r[0])),
        ])
        #expect(pool.machine.inFlightCount == 0)
        #expect(pool.machine.waitingCount == 0)
    }

    @Test("429 TooManyProviderTokenUpdates: the token provider hears of it first, the request goes again once, a second refusal is the answer")
    func tooManyTokenUpdatesResendsOnce() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_003_000
        let r = pool.submitFirst()
        // What the connection read of the first answer.
        r[0].status = 429
        r[0].body = Array(#"{"reason":"TooManyProviderTokenUpdates"}"#.utf8)
        r[0].responseAPNsID = r[0].notification.apnsID
        #expect(pool.finished(r[0], Self.tooManyUpdates(r[0])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_003_000), .scheduleDispatch,
        ])
        // Forgotten, so the next answer is read on its own.
        #expect(r[0].status == nil && r[0].body.isEmpty && r[0].responseAPNsID == nil)
        #expect(r[0].resendCount == 1)
        // The provider went back to the token before; the same connection
        // takes the request again (it is bound to nothing wrong).
        pool.tokenIssuedAt = 1_700_000_000
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        #expect(r[0].tokenIssuedAt == 1_700_000_000)
        #expect(pool.finished(r[0], Self.tooManyUpdates(r[0])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_000_000), .complete(r[0], Self.tooManyUpdates(r[0])),
        ])
    }

    @Test("429 TooManyProviderTokenUpdates, the second attempt accepted: the sender sees the acceptance")
    func tooManyTokenUpdatesThenAccepted() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_003_000
        let r = pool.submitFirst()
        _ = pool.finished(r[0], Self.tooManyUpdates(r[0]))
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted(r[0]))])
    }

    @Test("the resend after TooManyProviderTokenUpdates counts against maxResends")
    func tooManyTokenUpdatesWithinResendLimit() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst()
        for _ in 0..<APNsPoolMachine.maxResends {
            _ = pool.returned([r[0]])
            #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        }
        #expect(pool.finished(r[0], Self.tooManyUpdates(r[0])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_000_000), .complete(r[0], Self.tooManyUpdates(r[0])),
        ])
    }

    @Test("without a provider token (certificate auth) these answers are the request's own", arguments: [
        (403, APNsReason.unrelatedKeyIdInToken), (429, .tooManyProviderTokenUpdates),
    ])
    func tokenAnswersWithoutToken(status: Int, reason: APNsReason) {
        var pool = PoolHarness()
        let r = pool.submitFirst()
        let delivery = Self.answered(r[0], status, reason)
        #expect(pool.finished(r[0], delivery) == [.complete(r[0], delivery)])
    }

    @Test("other answers about the token are not sent again", arguments: [
        (403, APNsReason.expiredProviderToken), (403, .invalidProviderToken), (403, .badEnvironmentKeyInToken),
        (403, .badEnvironmentKeyIdInToken), (429, .tooManyRequests), (403, .unknown("SomethingNew")),
    ])
    func otherTokenAnswers(status: Int, reason: APNsReason) {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst()
        let delivery = Self.answered(r[0], status, reason)
        #expect(pool.finished(r[0], delivery) == [.complete(r[0], delivery)])
    }

    @Test("during shutdown these answers are the request's own; the provider still hears of a refused update")
    func tokenAnswersDuringShutdown() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst(2)
        _ = pool.send(r[1])
        #expect(pool.shutdown() == [.drainConnection(c0)])
        #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [.complete(r[0], Self.unrelatedKey(r[0]))])
        #expect(pool.finished(r[1], Self.tooManyUpdates(r[1])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_000_000), .complete(r[1], Self.tooManyUpdates(r[1])),
        ])
        #expect(pool.closed(c0) == [.cancelDeadlineTimer, .shutdownDone])
    }

    @Test("a request sent again keeps its answer deadline from the first send")
    func tokenResendKeepsDeadline() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let start = pool.now
        let r = pool.submitFirst(1, streams: 1)
        pool.now += Self.second
        _ = pool.finished(r[0], Self.tooManyUpdates(r[0]))
        // No free stream on c0 (not reported yet): another opens, and is slow.
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        pool.now = start + 8 * Self.second
        #expect(pool.deadlineFired() == [.complete(r[0], APNsDelivery(outcome: .answerTimedOut))])
        #expect(pool.ready(c1) == [])
    }
}
