// One service account's access token over time, as a value: events in,
// actions out, the clock (unix seconds) passed in. The I/O layer signs the
// assertion, posts it to the token endpoint and hands the answer back here.
//
//   none ──wanted──▶ fetching ──token──▶ valid ──kept time over, wanted──▶ fetching
//                       │                  └──FCM rejected it (401)──▶ fetching
//                       └──refused, no answer──▶ failed ──hold over, wanted──▶ fetching
//
// One fetch at a time: every send that wants the token while it is fetched
// waits for that fetch. Time passing needs no event of its own: every event
// carries `now`, and a token or a failure is read against it.

/// What a send gets: the access token, or why there is none.
public enum FCMAccessTokenResult: Sendable, Equatable {
    case token(String)
    /// The token endpoint brought no token: the send ends with this outcome
    /// (`FCMOutcome.noAccessToken`).
    case unavailable(FCMOutcome)
}

/// The access token of one service account. `Waiter` is what a send leaves
/// to be told the fetch's end (the I/O layer's completion).
///
/// An event that cannot happen in a state (the I/O layer has one fetch
/// under way exactly while the state is `fetching`) stops the process
/// naming both.
public struct FCMAccessTokenMachine<Waiter> {
    public enum State {
        /// No token and no fetch: the next send starts one.
        case none
        /// A fetch is under way, its assertion issued at `issuedAt`; `waiters`
        /// get its end. `failuresBefore`: fetches that failed in a row before
        /// it (the back-off's count). `replacesRejected`: FCM rejected the
        /// token before this one.
        case fetching(issuedAt: Int, waiters: [Waiter], failuresBefore: Int, replacesRejected: Bool)
        /// `token` is sent until `until` (its fetch's `issuedAt` plus
        /// `OAuthAccessToken.keepSeconds`).
        case valid(token: String, fetchedAt: Int, until: Int, replacesRejected: Bool)
        /// The last `failures` fetches failed, the last with `verdict` at
        /// `failedAt`; no fetch starts before `retryNotBefore`, and sends
        /// until then end at once with the verdict.
        case failed(verdict: FCMVerdict, failedAt: Int, retryNotBefore: Int, failures: Int)
    }

    public enum Action {
        /// Sign an assertion issued at `issuedAt` and post it to the token endpoint.
        case startFetch(issuedAt: Int)
        /// Give `token` to these waiters.
        case handOut(token: String, to: [Waiter])
        /// End these waiters' sends with `outcome` (`.noAccessToken`).
        case fail([Waiter], FCMOutcome)
    }

    /// The hold after the first failed fetch; it doubles with each failure
    /// in a row up to `maxHoldSeconds`. A refusing endpoint answers within a
    /// fraction of a second, and without a hold every send would post
    /// another assertion: five seconds bound a refused account to twelve
    /// requests a minute at first and, doubled to five minutes, to twelve an
    /// hour, while a passing fault (the endpoint restarting, a key enabled
    /// again) still ends within seconds. Sends during the hold end at once
    /// with the failure's verdict.
    public static var firstHoldSeconds: Int { 5 }
    public static var maxHoldSeconds: Int { 300 }
    /// A `Retry-After` of the endpoint's 429 or 503 is honoured as the hold,
    /// up to an hour: the life of the assertion, and of the token it would bring.
    public static var maxRetryAfterSeconds: Int { 3_600 }
    /// FCM rejecting a token younger than this that itself replaced a
    /// rejected one does not fetch again: a token fetched seconds ago is not
    /// stale, so the rejection is about the account (FCM's API disabled, the
    /// project's permissions), and a fetch per rejected send would hammer the
    /// endpoint while every send still fails. The first rejection after a
    /// token served normally always fetches.
    public static var freshTokenSeconds: Int { 10 }
    /// `FCMAccessTokenClock.stepSeconds`.
    public static var clockStepSeconds: Int { FCMAccessTokenClock.stepSeconds }

    public let account: FCMServiceAccount
    public private(set) var state: State = .none

    public init(account: FCMServiceAccount) {
        self.account = account
    }

    // MARK: Events

    /// What a send gets at `now` without waiting: the token while it is
    /// kept, the failure while it holds; nil when it must `wait`.
    @inlinable
    public func token(now: Int) -> FCMAccessTokenResult? {
        snapshot.token(now: now)
    }

    /// What the machine knows, for loops that read it without asking.
    @inlinable
    public var snapshot: FCMAccessTokenSnapshot {
        switch state {
        case .valid(let token, let fetchedAt, let until, _): .token(token, fetchedAt: fetchedAt, until: until)
        case .failed(let verdict, let failedAt, let retryNotBefore, _):
            .held(verdict, failedAt: failedAt, retryNotBefore: retryNotBefore)
        case .none, .fetching: .unknown
        }
    }

    /// A send wants the token at `now` and waits for it: joins the fetch
    /// under way, or starts one. A token or failure already known (what
    /// `token(now:)` returns) is handed to `waiter` at once.
    public mutating func wait(_ waiter: Waiter, now: Int, into actions: inout [Action]) {
        switch token(now: now) {
        case .token(let token)?:
            return actions.append(.handOut(token: token, to: [waiter]))
        case .unavailable(let outcome)?:
            return actions.append(.fail([waiter], outcome))
        case nil:
            break
        }
        switch state {
        case .none, .valid:
            // A token kept long enough is not sent in its last minutes
            // (OAuthAccessToken.refreshMarginSeconds): a new one is fetched.
            startFetch(waiters: [waiter], failuresBefore: 0, replacesRejected: false, now: now, into: &actions)
        case .fetching(let issuedAt, var waiters, let failuresBefore, let replacesRejected):
            state = .none  // drops the array's other reference, so the append does not copy it
            waiters.append(waiter)
            state = .fetching(issuedAt: issuedAt, waiters: waiters, failuresBefore: failuresBefore,
                              replacesRejected: replacesRejected)
        case .failed(_, _, _, let failures):
            startFetch(waiters: [waiter], failuresBefore: failures, replacesRejected: false, now: now, into: &actions)
        }
    }

    /// The token endpoint answered the fetch under way; `retryAfterSeconds`
    /// is its `Retry-After`, if any.
    public mutating func fetchAnswered(_ answer: OAuthTokenAnswer, retryAfterSeconds: Int?, now: Int,
                                      into actions: inout [Action]) {
        guard case .fetching(let issuedAt, let waiters, let failuresBefore, let replacesRejected) = state else {
            impossible("fetchAnswered")
        }
        if case .token(let token) = answer {
            // Kept from the request's time: the endpoint's clock started no
            // earlier than that (OAuthAccessToken.keepSeconds).
            state = .valid(token: token.value, fetchedAt: issuedAt, until: issuedAt &+ token.keepSeconds,
                           replacesRejected: replacesRejected)
            actions.append(.handOut(token: token.value, to: waiters))
            return
        }
        let failures = failuresBefore + 1
        var hold = Self.holdSeconds(afterFailures: failures)
        if case .unavailable = answer, let retryAfterSeconds {
            hold = min(max(retryAfterSeconds, 1), Self.maxRetryAfterSeconds)
        }
        // A refused, unavailable or unreadable answer has a verdict (a token has none).
        let verdict = FCMVerdict(answer, account: account, retryAfterSeconds: hold)
            ?? .failed(detail: "the token endpoint \(account.tokenEndpoint.host) answered without a token")
        fail(waiters, verdict: verdict, failures: failures, hold: hold, now: now, into: &actions)
    }

    /// The fetch under way brought no answer (no connection, no answer in
    /// time; `detail` says which): a passing fault, so a 503 with the hold
    /// as its `Retry-After`.
    public mutating func fetchFailed(_ detail: String, now: Int, into actions: inout [Action]) {
        guard case .fetching(_, let waiters, let failuresBefore, _) = state else { impossible("fetchFailed") }
        let failures = failuresBefore + 1
        let hold = Self.holdSeconds(afterFailures: failures)
        let verdict = FCMVerdict.retryLater(
            seconds: hold, detail: "the token endpoint \(account.tokenEndpoint.host) did not answer: \(detail)")
        fail(waiters, verdict: verdict, failures: failures, hold: hold, now: now, into: &actions)
    }

    /// The fetch under way ended with a token another instance of the
    /// fleet fetched, kept until `until` (the fetching instance's keep).
    public mutating func adopted(token: String, until: Int, now: Int, into actions: inout [Action]) {
        guard case .fetching(_, let waiters, _, let replacesRejected) = state else { impossible("adopted") }
        state = .valid(token: token, fetchedAt: now, until: until, replacesRejected: replacesRejected)
        actions.append(.handOut(token: token, to: waiters))
    }

    /// The assertion for the fetch under way could not be signed (the
    /// private key is no RSA key OpenSSL can sign with): the account's
    /// credentials are unusable, as when the endpoint refuses them.
    public mutating func signingFailed(_ reason: String, now: Int, into actions: inout [Action]) {
        guard case .fetching(_, let waiters, let failuresBefore, _) = state else { impossible("signingFailed") }
        let failures = failuresBefore + 1
        let verdict = FCMVerdict.credentialsRejected(
            detail: "the service account \(account) cannot sign its assertion: \(reason)")
        fail(waiters, verdict: verdict, failures: failures, hold: Self.holdSeconds(afterFailures: failures),
             now: now, into: &actions)
    }

    /// FCM rejected `token` (a 401 or 403 that a stale token may cause): a
    /// new one is fetched at once, unless `token` is no longer the one in
    /// use (another send's rejection already replaced it: N sends rejected
    /// together make one fetch) or is fresh (`freshTokenSeconds`).
    public mutating func rejected(token rejectedToken: String, now: Int, into actions: inout [Action]) {
        guard case .valid(let token, let fetchedAt, _, let replacesRejected) = state, token == rejectedToken else {
            // A token already replaced, being replaced, or never kept.
            return
        }
        if replacesRejected && now &- fetchedAt < Self.freshTokenSeconds { return }
        startFetch(waiters: [], failuresBefore: 0, replacesRejected: true, now: now, into: &actions)
    }

    // MARK: Helpers

    /// The hold after `failures` failed fetches in a row:
    /// `min(maxHoldSeconds, firstHoldSeconds · 2^(failures − 1))`.
    public static func holdSeconds(afterFailures failures: Int) -> Int {
        let doublings = min(max(failures - 1, 0), 16)  // 5 s · 2^16 is far past the cap
        return min(maxHoldSeconds, firstHoldSeconds << doublings)
    }

    private mutating func startFetch(waiters: [Waiter], failuresBefore: Int, replacesRejected: Bool, now: Int,
                                     into actions: inout [Action]) {
        state = .fetching(issuedAt: now, waiters: waiters, failuresBefore: failuresBefore,
                          replacesRejected: replacesRejected)
        actions.append(.startFetch(issuedAt: now))
    }

    private mutating func fail(_ waiters: [Waiter], verdict: FCMVerdict, failures: Int, hold: Int, now: Int,
                               into actions: inout [Action]) {
        state = .failed(verdict: verdict, failedAt: now, retryNotBefore: now &+ hold, failures: failures)
        actions.append(.fail(waiters, .noAccessToken(verdict)))
    }

    /// The state's name only: the state holds the token, which no message shows.
    private var stateName: String {
        switch state {
        case .none: "none"
        case .fetching: "fetching"
        case .valid: "valid"
        case .failed: "failed"
        }
    }

    private func impossible(_ event: String) -> Never {
        preconditionFailure("FCMAccessTokenMachine: event \(event) in state \(stateName)")
    }
}

extension FCMAccessTokenMachine.State: Equatable where Waiter: Equatable {}
extension FCMAccessTokenMachine.Action: Equatable where Waiter: Equatable {}
extension FCMAccessTokenMachine: Equatable where Waiter: Equatable {}
