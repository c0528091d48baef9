/// What a service account's token machine knows, as a value other event
/// loops can hold: the token and how long it is sent, or the failure and
/// how long it holds. A send reads it against its clock (`token(now:)`)
/// without asking the machine, so one machine serves every loop.
public enum FCMAccessTokenSnapshot: Sendable, Equatable {
    /// No token and no held failure: a send must ask the machine.
    case unknown
    /// `token` is sent until `until`; counted from `fetchedAt`.
    case token(String, fetchedAt: Int, until: Int)
    /// Sends end with `verdict` until `retryNotBefore`; counted from `failedAt`.
    case held(FCMVerdict, failedAt: Int, retryNotBefore: Int)

    /// What a send gets at `now` without waiting: the token while it is
    /// kept, the failure while it holds; nil when it must wait for a fetch.
    /// A clock stepped back by more than `FCMAccessTokenMachine`'s
    /// `clockStepSeconds` ends either.
    @inlinable
    public func token(now: Int) -> FCMAccessTokenResult? {
        switch self {
        case .token(let token, let fetchedAt, let until)
            where now < until && now >= fetchedAt &- FCMAccessTokenClock.stepSeconds:
            return .token(token)
        case .held(let verdict, let failedAt, let retryNotBefore)
            where now < retryNotBefore && now >= failedAt &- FCMAccessTokenClock.stepSeconds:
            return .unavailable(Self.heldOutcome(verdict, retryNotBefore: retryNotBefore, now: now))
        case .unknown, .token, .held:
            return nil
        }
    }

    /// A held failure as a send at `now` gets it: a 503's `Retry-After`
    /// counts down to the hold's end, so the sender comes back when the
    /// relay will fetch again.
    @usableFromInline
    static func heldOutcome(_ verdict: FCMVerdict, retryNotBefore: Int, now: Int) -> FCMOutcome {
        guard case .retryLater(_, let detail) = verdict else { return .noAccessToken(verdict) }
        return .noAccessToken(.retryLater(seconds: max(retryNotBefore &- now, 1), detail: detail))
    }
}

/// The clock is the wall clock (the assertion's `iat` is read by the
/// endpoint's). Stepped back by more than `stepSeconds`, a token or a hold
/// is over: counted from a time that has not come yet, it could otherwise
/// last as long as the step (a day's step would hold a failure a day).
public enum FCMAccessTokenClock {
    public static var stepSeconds: Int { 60 }
}
