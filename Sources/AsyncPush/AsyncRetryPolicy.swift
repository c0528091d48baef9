import EventLoop
import Delivery

/// What an asynchronous `/api/push` does after one try of one notification:
/// done (with why), or try again at a time. Pure: the time (`now`) and the
/// jitter's random numbers are the caller's, so the same policy serves the
/// in-process queue and a queue shared by a fleet, and tests read as tables.
///
/// Times are wall-clock milliseconds since the epoch, not a loop's monotonic
/// clock: `apns-expiration` is wall-clock seconds (Apple: "a UNIX epoch
/// expressed in seconds (UTC)"), and a queue shared by several hosts can
/// carry only a wall-clock time.
///
/// Retried: what the push service's answer makes retryable (`PushResult`;
/// for APNs: 5xx, 429 TooManyRequests, no answer, and the relay's own
/// refusals, `APNsPush.result(of:)`). Final: an accepted or refused
/// answer, `apns-expiration` 0 (APNs' "deliver only once"), a retry that
/// would fall after the expiration, and `maxTries` spent.
///
/// Backoff: capped exponential with equal jitter. After the n-th failed try
/// the ceiling is `min(maxDelay, baseDelay × 2^(n−1))`, and the delay half
/// that ceiling plus a random part of the other half: never less than half
/// (so a burst of failures cannot retry at once), spread over the other half
/// (so the tokens of one request refused together do not come back in one
/// burst). A `Retry-After` in APNs' answer (Apple documents none; a front
/// before APNs, or a later APNs, may send one; at most an hour,
/// `APNsDelivery.maxRetryAfterSeconds`) is a floor under the delay, above
/// `maxDelay` too; the expiration still ends what would retry too late.
public struct AsyncRetryPolicy: Sendable, Equatable {
    /// Tries in all, the first included (`API_ASYNC_MAX_TRIES`).
    public var maxTries: Int
    public var baseDelayMilliseconds: Int64
    public var maxDelayMilliseconds: Int64

    /// `baseDelay` 1 s and `maxDelay` 60 s: with the default five tries the
    /// retries come after about 0.5–1, 1–2, 2–4 and 4–8 s, about 15 s at
    /// most in all, within what APNs takes to recover from a 503 it answers
    /// while restarting a node; a longer outage reaches the hook.
    public init(maxTries: Int, baseDelayMilliseconds: Int64 = 1_000, maxDelayMilliseconds: Int64 = 60_000) {
        precondition(maxTries >= 1, "a notification is tried at least once")
        precondition(baseDelayMilliseconds > 0 && maxDelayMilliseconds >= baseDelayMilliseconds)
        (self.maxTries, self.baseDelayMilliseconds, self.maxDelayMilliseconds) =
            (maxTries, baseDelayMilliseconds, maxDelayMilliseconds)
    }

    /// The decision after a try.
    /// - Parameters:
    ///   - result: what the try's answer means (`PushService.result(of:)`).
    ///   - tries: tries made so far, this one included (1 after the first).
    ///   - expiration: the notification's `apns-expiration`, seconds since
    ///     the epoch; 0 is "deliver once"; nil (no header) bounds nothing
    ///     but `maxTries`.
    ///   - retryAfterSeconds: the answer's `Retry-After`, if any.
    ///   - now: milliseconds since the epoch.
    public func decide(after result: PushResult, tries: Int, expiration: Int64?, retryAfterSeconds: Int? = nil,
                       now: Int64, random: inout some RandomNumberGenerator) -> AsyncRetryDecision {
        precondition(tries >= 1, "a decision follows a try")
        switch result {
        case .accepted: return .done(.accepted)
        case .refused: return .done(.refused)
        case .retryable: break
        }
        if expiration == 0 { return .done(.expired) }
        if tries >= maxTries { return .done(.triesSpent) }
        var delay = jitteredDelay(afterFailedTries: tries, random: &random)
        if let retryAfterSeconds, retryAfterSeconds > 0 {
            delay = max(delay, Int64(retryAfterSeconds) * 1_000)
        }
        let at = now + delay
        // APNs keeps a notification until the end of its expiration second.
        if let expiration, at >= (expiration + 1) * 1_000 { return .done(.expired) }
        return .retry(at: at)
    }

    /// The delay after `tries` failed tries, jitter included.
    public func jitteredDelay(afterFailedTries tries: Int, random: inout some RandomNumberGenerator) -> Int64 {
        Int64(backoff.delay(afterFailures: tries, random: &random))
    }

    /// `min(maxDelay, baseDelay × 2^(tries−1))`, without overflow.
    public func ceilingDelay(afterFailedTries tries: Int) -> Int64 {
        Int64(backoff.ceiling(afterFailures: tries))
    }

    private var backoff: Backoff {
        Backoff(base: UInt64(baseDelayMilliseconds), cap: UInt64(maxDelayMilliseconds))
    }
}

/// `AsyncRetryPolicy.decide`'s answer.
public enum AsyncRetryDecision: Sendable, Equatable {
    /// No more tries: the last outcome is the notification's; a failure goes
    /// to the hook, a dead token to the feedback list, as in sync mode.
    case done(AsyncEnd)
    /// Try again at this time, milliseconds since the epoch.
    case retry(at: Int64)
}

/// Why an asynchronous notification is done.
public enum AsyncEnd: Sendable, Equatable {
    /// The push service accepted it (APNs: 2xx).
    case accepted
    /// The push service refused it for good (APNs: a status other than
    /// 2xx, 429 and 5xx).
    case refused
    /// A retryable failure, but the notification expires before a retry
    /// (or its `apns-expiration` is 0: APNs' "deliver only once").
    case expired
    /// A retryable failure on the last of `maxTries`.
    case triesSpent
}
