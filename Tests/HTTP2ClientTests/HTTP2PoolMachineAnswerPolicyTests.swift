import Testing
@testable import HTTP2Client

/// What the machine does with a request's policy for an error answer
/// (`PooledRequest.policy(afterAnswer:)`): APNs' answers about the provider
/// token are the cases (APNsTests' `PooledNotificationPolicyTests` maps
/// APNs' reasons to these policies).
@Suite("HTTP/2 pool machine: the policy after an error answer")
struct HTTP2PoolMachineAnswerPolicyTests {
    static let second = PoolHarness.second

    /// APNs' 403 UnrelatedKeyIdInToken: the connection is bound to another key.
    static let anotherConnection = AnswerPolicy(resend: .anotherConnection)
    /// APNs' 429 TooManyProviderTokenUpdates, first time: the authorizer hears, the request goes again.
    static let renewedTooOften = AnswerPolicy(resend: .anyConnection, refusal: .renewedTooOften)
    /// The same refusal once more: the authorizer hears, the answer is the request's.
    static let renewedTooOftenAgain = AnswerPolicy(resend: .no, refusal: .renewedTooOften)
    static let forbidden = PooledAnswer.answered(status: 403)
    static let tooMany = PooledAnswer.answered(status: 429)

    @Test("resend on another connection: the connection drains and the request goes again on another, opened for it")
    func anotherConnectionMovesTheRequest() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let r = pool.submitFirst(3)
        r[0].policies = [Self.anotherConnection]
        r[1].policies = [Self.anotherConnection]
        #expect(pool.send(r[1]) == [.submit(r[1], on: c0)])
        #expect(pool.finished(r[0], Self.forbidden) == [.drainConnection(c0), .scheduleDispatch])
        #expect(r[0].phase == .queued)
        #expect(r[0].resendCount == 1)
        #expect(!r[0].isCompleted)
        #expect(pool.machine.waitingCount == 1)
        #expect(pool.machine.inFlightCount == 1)
        // The draining connection takes nothing: another opens.
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        #expect(pool.send(r[2]) == [])
        // Another request answered so on the same connection: already draining.
        #expect(pool.finished(r[1], Self.forbidden) == [.scheduleDispatch])
        #expect(pool.ready(c1) == [.submit(r[0], on: c1), .submit(r[1], on: c1), .submit(r[2], on: c1)])
        #expect(pool.closed(c0) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted)])
    }

    @Test("resend on another connection, every time: at most maxResends times, then that answer is the request's own")
    func anotherConnectionResendLimit() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let r = pool.submitFirst()
        r[0].policies = Array(repeating: Self.anotherConnection, count: HTTP2PoolMachine.maxResends + 1)
        for attempt in 0..<HTTP2PoolMachine.maxResends {
            let connection = PoolConnectionID(rawValue: attempt)
            let next = PoolConnectionID(rawValue: attempt + 1)
            #expect(pool.finished(r[0], Self.forbidden) == [.drainConnection(connection), .scheduleDispatch])
            #expect(pool.closed(connection) == [])
            #expect(pool.dispatchRan() == [.openConnection(next)])
            #expect(pool.ready(next) == [.submit(r[0], on: next)], "attempt \(attempt + 2)")
        }
        let last = PoolConnectionID(rawValue: HTTP2PoolMachine.maxResends)
        #expect(pool.finished(r[0], Self.forbidden) == [.drainConnection(last), .complete(r[0], Self.forbidden)])
        #expect(pool.machine.inFlightCount == 0)
        #expect(pool.machine.waitingCount == 0)
    }

    @Test("a credential renewed too often: the authorizer hears of it first, the request goes again, a second refusal is the answer")
    func renewedTooOftenResends() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_003_000
        let r = pool.submitFirst()
        r[0].policies = [Self.renewedTooOften, Self.renewedTooOftenAgain]
        // What the connection read of the first answer.
        r[0].status = 429
        r[0].body = Array(#"{"reason":"TooManyProviderTokenUpdates"}"#.utf8)
        #expect(pool.finished(r[0], Self.tooMany) == [
            .credentialRefused(.renewedTooOften, stamp: 1_700_003_000), .scheduleDispatch,
        ])
        // Forgotten, so the next answer is read on its own.
        #expect(r[0].status == nil && r[0].body.isEmpty)
        #expect(r[0].resendCount == 1)
        // The authorizer went back to the credential before; the same
        // connection takes the request again (it is bound to nothing wrong).
        pool.authorizationStamp = 1_700_000_000
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        #expect(r[0].authorizationStamp == 1_700_000_000)
        #expect(pool.finished(r[0], Self.tooMany) == [
            .credentialRefused(.renewedTooOften, stamp: 1_700_000_000), .complete(r[0], Self.tooMany),
        ])
    }

    @Test("a credential renewed too often, the second attempt accepted: the sender sees the acceptance")
    func renewedTooOftenThenAccepted() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_003_000
        let r = pool.submitFirst()
        r[0].policies = [Self.renewedTooOften]
        _ = pool.finished(r[0], Self.tooMany)
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted)])
    }

    @Test("the resend after a refused credential counts against maxResends")
    func refusalWithinResendLimit() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let r = pool.submitFirst()
        r[0].policies = [Self.renewedTooOften]
        for _ in 0..<HTTP2PoolMachine.maxResends {
            _ = pool.returned([r[0]])
            #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        }
        #expect(pool.finished(r[0], Self.tooMany) == [
            .credentialRefused(.renewedTooOften, stamp: 1_700_000_000), .complete(r[0], Self.tooMany),
        ])
    }

    @Test("an error answer whose policy is to complete is the request's own", arguments: [403, 429, 500])
    func completePolicy(status: Int) {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let r = pool.submitFirst()
        #expect(pool.finished(r[0], .answered(status: status)) == [.complete(r[0], .answered(status: status))])
    }

    @Test("a rejected credential without a resend: the authorizer hears of it, the answer is the request's")
    func rejectedWithoutResend() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let r = pool.submitFirst()
        r[0].policies = [AnswerPolicy(resend: .no, refusal: .rejected)]
        #expect(pool.finished(r[0], Self.forbidden) == [
            .credentialRefused(.rejected, stamp: 1_700_000_000), .complete(r[0], Self.forbidden),
        ])
    }

    @Test("a 2xx answer does not ask the request's policy")
    func successSkipsPolicy() {
        var pool = PoolHarness()
        let r = pool.submitFirst()
        r[0].policies = [Self.renewedTooOften]
        #expect(pool.finished(r[0], .answered(status: 204)) == [.complete(r[0], .answered(status: 204))])
        #expect(r[0].policies.count == 1)
    }

    @Test("during shutdown the answer is the request's own; the authorizer still hears of a refusal")
    func policyDuringShutdown() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let r = pool.submitFirst(2)
        r[0].policies = [Self.anotherConnection]
        r[1].policies = [Self.renewedTooOften]
        _ = pool.send(r[1])
        #expect(pool.shutdown() == [.drainConnection(c0)])
        #expect(pool.finished(r[0], Self.forbidden) == [.complete(r[0], Self.forbidden)])
        #expect(pool.finished(r[1], Self.tooMany) == [
            .credentialRefused(.renewedTooOften, stamp: 1_700_000_000), .complete(r[1], Self.tooMany),
        ])
        #expect(pool.closed(c0) == [.cancelDeadlineTimer, .shutdownDone])
    }

    @Test("a request sent again keeps its answer deadline from the first send")
    func resendKeepsDeadline() {
        var pool = PoolHarness()
        pool.authorizationStamp = 1_700_000_000
        let start = pool.now
        let r = pool.submitFirst(1, streams: 1)
        r[0].policies = [Self.renewedTooOften]
        pool.now += Self.second
        _ = pool.finished(r[0], Self.tooMany)
        // No free stream on c0 (not reported yet): another opens, and is slow.
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        pool.now = start + 8 * Self.second
        #expect(pool.deadlineFired() == [.complete(r[0], .failed(.answerTimedOut))])
        #expect(pool.ready(c1) == [])
    }
}
