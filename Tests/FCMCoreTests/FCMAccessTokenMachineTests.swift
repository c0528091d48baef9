// One service account's access token over time: kept, fetched once for
// many sends, refused, held, rejected by FCM. The clock is unix seconds
// handed to every event; waiters are numbers.

import FCMCore
import Testing

@Suite("An account's access token")
struct FCMAccessTokenMachineTests {
    typealias Machine = FCMAccessTokenMachine<Int>
    typealias Action = Machine.Action

    static let start = 1_700_000_000
    static let googleToken = OAuthAccessToken(value: "ya29.first", expiresInSeconds: 3599)

    /// A machine whose fetch started at `start` for waiter 1.
    static func fetching() throws -> Machine {
        var machine = Machine(account: try consoleAccount())
        var actions: [Action] = []
        machine.wait(1, now: start, into: &actions)
        #expect(actions == [.startFetch(issuedAt: start)])
        return machine
    }

    /// A machine holding `token`, fetched at `start`.
    static func holding(_ token: OAuthAccessToken = googleToken) throws -> Machine {
        var machine = try fetching()
        var actions: [Action] = []
        machine.fetchAnswered(.token(token), retryAfterSeconds: nil, now: start + 1, into: &actions)
        #expect(actions == [.handOut(token: token.value, to: [1])])
        return machine
    }

    static func refusal(_ code: String, status: Int = 400) -> OAuthTokenAnswer {
        .refused(OAuthRefusal(status: status, code: OAuthErrorCode(code), errorDescription: "Invalid JWT Signature."))
    }

    @Test("no token yet: a send waits, and the fetch's assertion is issued now")
    func firstSendStartsAFetch() throws {
        let machine = try Self.fetching()
        #expect(machine.token(now: Self.start) == nil)
        guard case .fetching(let issuedAt, let waiters, 0, false) = machine.state else {
            Issue.record("not fetching: \(machine.state)")
            return
        }
        #expect(issuedAt == Self.start)
        #expect(waiters == [1])
    }

    @Test("sends while a fetch is under way wait for it: one fetch, every waiter gets its token")
    func oneFetchForManyWaiters() throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        for waiter in 2...50 { machine.wait(waiter, now: Self.start + 1, into: &actions) }
        #expect(actions.isEmpty)
        machine.fetchAnswered(.token(Self.googleToken), retryAfterSeconds: nil, now: Self.start + 2, into: &actions)
        #expect(actions == [.handOut(token: "ya29.first", to: Array(1...50))])
        #expect(machine.token(now: Self.start + 2) == .token("ya29.first"))
    }

    @Test("a token is kept until keepSeconds after its fetch started, then fetched again", arguments: [
        // (expires_in, seconds after the fetch started, still kept)
        (3599, 0, true), (3599, 3298, true), (3599, 3299, false), (3599, 3600, false),
        (600, 299, true), (600, 300, false),
        (10, 4, true), (10, 5, false),  // a short token: half its life
        (1, 0, true), (1, 1, false),
    ])
    func keptUntilKeepSeconds(expiresIn: Int, later: Int, kept: Bool) throws {
        let token = OAuthAccessToken(value: "ya29.kept", expiresInSeconds: expiresIn)
        var machine = try Self.holding(token)
        let now = Self.start + later
        var actions: [Action] = []
        machine.wait(7, now: now, into: &actions)
        if kept {
            #expect(machine.token(now: now) == .token("ya29.kept"))
            #expect(actions == [.handOut(token: "ya29.kept", to: [7])])
        } else {
            #expect(machine.token(now: now) == nil)
            #expect(actions == [.startFetch(issuedAt: now)])
        }
    }

    @Test("the token is kept from the request's time, however late its answer")
    func keptFromTheRequestsTime() throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        machine.fetchAnswered(.token(Self.googleToken), retryAfterSeconds: nil, now: Self.start + 30, into: &actions)
        #expect(machine.token(now: Self.start + 3298) == .token("ya29.first"))
        #expect(machine.token(now: Self.start + 3299) == nil)
    }

    @Test("a refusal of the account fails every waiter as rejected credentials, naming the account", arguments: [
        "invalid_grant", "invalid_client", "unauthorized_client",
    ])
    func refusalNamesTheAccount(code: String) throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        machine.wait(2, now: Self.start, into: &actions)
        machine.fetchAnswered(Self.refusal(code), retryAfterSeconds: nil, now: Self.start + 1, into: &actions)
        guard actions.count == 1, case .fail(let waiters, .noAccessToken(.credentialsRejected(let detail))) = actions[0]
        else {
            Issue.record("not a credentials rejection: \(actions)")
            return
        }
        #expect(waiters == [1, 2])
        #expect(detail.contains("firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com"))
        #expect(detail.contains("0123456789abcdef0123456789abcdef01234567"))
        #expect(detail.contains(code))
        #expect(!detail.contains("SecretKeyMaterial"))
    }

    @Test("other answers without a token fail the waiters with their verdicts", arguments: [
        (refusal("invalid_scope"), nil, FCMVerdict.failed(
            detail: #"the token endpoint oauth2.googleapis.com refused the token request: 400 "invalid_scope" "Invalid JWT Signature.""#)),
        (.malformed(reason: "HTTP 302 without an OAuth error"), nil, .failed(
            detail: "the token endpoint oauth2.googleapis.com answered HTTP 302 without an OAuth error")),
        (.unavailable(status: 503), 30, .retryLater(seconds: 30, detail: "the token endpoint oauth2.googleapis.com answered 503")),
        (.unavailable(status: 429), 0, .retryLater(seconds: 1, detail: "the token endpoint oauth2.googleapis.com answered 429")),
        (.unavailable(status: 503), 100_000,
         .retryLater(seconds: 3600, detail: "the token endpoint oauth2.googleapis.com answered 503")),
        // No Retry-After: the back-off's hold, which is what the sender is told.
        (.unavailable(status: 500), nil, .retryLater(seconds: 5, detail: "the token endpoint oauth2.googleapis.com answered 500")),
    ] as [(OAuthTokenAnswer, Int?, FCMVerdict)])
    func otherFailures(answer: OAuthTokenAnswer, retryAfter: Int?, verdict: FCMVerdict) throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        machine.fetchAnswered(answer, retryAfterSeconds: retryAfter, now: Self.start + 1, into: &actions)
        #expect(actions == [.fail([1], .noAccessToken(verdict))])
    }

    @Test("no answer is a 503 for the hold; an unsigned assertion rejects the credentials")
    func noAnswerAndNoSignature() throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        machine.fetchFailed("connection refused", now: Self.start, into: &actions)
        #expect(actions == [.fail([1], .noAccessToken(.retryLater(
            seconds: 5, detail: "the token endpoint oauth2.googleapis.com did not answer: connection refused")))])

        machine = try Self.fetching()
        actions = []
        machine.signingFailed("not an RSA key", now: Self.start, into: &actions)
        guard case .fail([1], .noAccessToken(.credentialsRejected(let detail))) = actions.first else {
            Issue.record("not a credentials rejection: \(actions)")
            return
        }
        #expect(detail.contains("firebase-adminsdk-abc12@") && detail.contains("not an RSA key"))
    }

    @Test("after a failure, sends end at once until the hold is over; then one fetch", arguments: [
        // (Retry-After of a 503, hold)
        (nil, 5), (30, 30), (2, 2),
    ] as [(Int?, Int)])
    func holdAfterFailure(retryAfter: Int?, hold: Int) throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        let failedAt = Self.start + 1
        machine.fetchAnswered(.unavailable(status: 503), retryAfterSeconds: retryAfter, now: failedAt, into: &actions)
        actions = []
        for elapsed in 0..<hold {
            // The Retry-After a held send gets counts down to the hold's end.
            let outcome = FCMOutcome.noAccessToken(.retryLater(
                seconds: hold - elapsed, detail: "the token endpoint oauth2.googleapis.com answered 503"))
            #expect(machine.token(now: failedAt + elapsed) == .unavailable(outcome))
            machine.wait(elapsed, now: failedAt + elapsed, into: &actions)
            #expect(actions == [.fail([elapsed], outcome)])
            actions = []
        }
        #expect(machine.token(now: failedAt + hold) == nil)
        machine.wait(99, now: failedAt + hold, into: &actions)
        #expect(actions == [.startFetch(issuedAt: failedAt + hold)])
    }

    @Test("a refusal is held too: no send reaches the endpoint until the hold is over")
    func refusalHeld() throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        machine.fetchAnswered(Self.refusal("invalid_grant"), retryAfterSeconds: nil, now: Self.start, into: &actions)
        guard case .fail(_, let outcome) = actions.first else { return }
        actions = []
        machine.wait(2, now: Self.start + 4, into: &actions)
        #expect(actions == [.fail([2], outcome)])
        #expect(machine.token(now: Self.start + 4) == .unavailable(outcome))
        actions = []
        machine.wait(3, now: Self.start + 5, into: &actions)
        #expect(actions == [.startFetch(issuedAt: Self.start + 5)])
    }

    @Test("the hold doubles with each failure in a row, up to five minutes", arguments: [
        (1, 5), (2, 10), (3, 20), (4, 40), (5, 80), (6, 160), (7, 300), (8, 300), (1000, 300), (0, 5),
    ])
    func holdDoubles(failures: Int, hold: Int) {
        #expect(Machine.holdSeconds(afterFailures: failures) == hold)
    }

    @Test("failures in a row lengthen the hold; a token resets it")
    func backOffResets() throws {
        var machine = try Self.fetching()
        var actions: [Action] = []
        var now = Self.start
        for hold in [5, 10, 20] {
            machine.fetchFailed("timed out", now: now, into: &actions)
            guard case .failed(_, _, let retryNotBefore, _) = machine.state else { return }
            #expect(retryNotBefore == now + hold)
            now = retryNotBefore
            machine.wait(1, now: now, into: &actions)
        }
        machine.fetchAnswered(.token(Self.googleToken), retryAfterSeconds: nil, now: now, into: &actions)
        now += 4000
        machine.wait(1, now: now, into: &actions)
        machine.fetchFailed("timed out", now: now, into: &actions)
        guard case .failed(_, _, let retryNotBefore, 1) = machine.state else {
            Issue.record("not failed once: \(machine.state)")
            return
        }
        #expect(retryNotBefore == now + 5)
    }

    @Test("FCM rejecting the token in use fetches a new one once, however many sends it rejected")
    func rejectedTokenRefetchedOnce() throws {
        var machine = try Self.holding()
        var actions: [Action] = []
        let now = Self.start + 600
        for _ in 1...10 { machine.rejected(token: "ya29.first", now: now, into: &actions) }
        #expect(actions == [.startFetch(issuedAt: now)])
        #expect(machine.token(now: now) == nil)
        actions = []
        for waiter in 1...10 { machine.wait(waiter, now: now, into: &actions) }
        #expect(actions.isEmpty)
        let second = OAuthAccessToken(value: "ya29.second", expiresInSeconds: 3599)
        machine.fetchAnswered(.token(second), retryAfterSeconds: nil, now: now + 1, into: &actions)
        #expect(actions == [.handOut(token: "ya29.second", to: Array(1...10))])
        // Late rejections of the first token change nothing.
        actions = []
        machine.rejected(token: "ya29.first", now: now + 2, into: &actions)
        #expect(actions.isEmpty)
        #expect(machine.token(now: now + 2) == .token("ya29.second"))
    }

    @Test("a rejection of a token no longer in use, or with none in use, changes nothing")
    func staleRejection() throws {
        var machines = [Machine(account: try consoleAccount()), try Self.fetching(), try Self.holding()]
        var failed = try Self.fetching()
        var actions: [Action] = []
        failed.fetchFailed("timed out", now: Self.start, into: &actions)
        machines.append(failed)
        for var machine in machines {
            let before = machine
            actions = []
            machine.rejected(token: "ya29.older", now: Self.start + 600, into: &actions)
            #expect(actions.isEmpty)
            #expect(machine == before)
        }
    }

    @Test("a fresh token that replaced a rejected one is not replaced again within seconds")
    func freshReplacementKept() throws {
        var machine = try Self.holding()
        var actions: [Action] = []
        let rejectedAt = Self.start + 600
        machine.rejected(token: "ya29.first", now: rejectedAt, into: &actions)
        let second = OAuthAccessToken(value: "ya29.second", expiresInSeconds: 3599)
        machine.fetchAnswered(.token(second), retryAfterSeconds: nil, now: rejectedAt, into: &actions)
        actions = []
        machine.rejected(token: "ya29.second", now: rejectedAt + 9, into: &actions)
        #expect(actions.isEmpty)
        #expect(machine.token(now: rejectedAt + 9) == .token("ya29.second"))
        machine.rejected(token: "ya29.second", now: rejectedAt + 10, into: &actions)
        #expect(actions == [.startFetch(issuedAt: rejectedAt + 10)])
    }

    @Test("a token served normally is replaced at its first rejection, however fresh")
    func firstRejectionAlwaysFetches() throws {
        var machine = try Self.holding()
        var actions: [Action] = []
        machine.rejected(token: "ya29.first", now: Self.start + 1, into: &actions)
        #expect(actions == [.startFetch(issuedAt: Self.start + 1)])
    }

    @Test("a clock stepped back by more than a minute ends a kept token and a hold", arguments: [
        // (seconds back from the fetch or failure, still kept or held)
        (0, true), (60, true), (61, false), (86_400, false),
    ])
    func clockSteppedBack(back: Int, stillCounted: Bool) throws {
        let kept = try Self.holding()
        #expect(kept.token(now: Self.start - back) == (stillCounted ? .token("ya29.first") : nil))
        var failed = try Self.fetching()
        var actions: [Action] = []
        failed.fetchFailed("timed out", now: Self.start, into: &actions)
        actions = []
        failed.wait(2, now: Self.start - back, into: &actions)
        if stillCounted {
            guard case .fail([2], _)? = actions.first else {
                Issue.record("not held: \(actions)")
                return
            }
        } else {
            #expect(actions == [.startFetch(issuedAt: Self.start - back)])
        }
    }

    @Test("an answer with no fetch under way stops the process")
    func answerWithoutFetch() async {
        await #expect(processExitsWith: .failure) {
            var machine = FCMAccessTokenMachine<Int>(account: try consoleAccount())
            var actions: [FCMAccessTokenMachine<Int>.Action] = []
            machine.fetchFailed("timed out", now: 0, into: &actions)
        }
    }
}
