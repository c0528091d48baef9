/// The wait before trying again after failures in a row: capped exponential
/// backoff, `min(cap, base·2^(n−1))` after the n-th failure, and that
/// ceiling with "equal jitter": half of it fixed, half random. Never less
/// than half, so a burst of failures cannot come back at once; spread over
/// the other half, so the reconnects of many loops and relays (or the
/// retries of the tokens of one refused request) do not come back in one
/// burst either.
///
/// The one backoff of the relay: APNs connection attempts, Redis
/// reconnects, the asynchronous `/api/push` retries, and the feedback
/// hook's posts (one worker thread posting in order: the ceiling alone,
/// without jitter).
///
/// Pure: the random numbers are the caller's (the state machines take theirs
/// injected, so tests give exact values), and so is the unit (nanoseconds on
/// the loop's clock, milliseconds of wall-clock time).
public struct Backoff: Sendable, Equatable {
    /// The wait after the first failure, before jitter.
    public var base: UInt64
    /// The longest wait, before jitter.
    public var cap: UInt64

    /// The doubling stops at 2^30 times the base: a longer wait than that
    /// is the cap's business (2^30 × 1 ms is 12 days).
    public static let maxDoublings = 30

    public init(base: UInt64, cap: UInt64) {
        (self.base, self.cap) = (base, cap)
    }

    /// `min(cap, base·2^(n−1))` after `failures` failures in a row (fewer
    /// than one count as one), without overflow.
    public func ceiling(afterFailures failures: Int) -> UInt64 {
        let doublings = min(max(failures - 1, 0), Self.maxDoublings)
        let (doubled, overflow) = base.multipliedReportingOverflow(by: UInt64(1) << UInt64(doublings))
        return overflow ? cap : min(cap, doubled)
    }

    /// The ceiling after `failures` failures, half of it fixed and half
    /// random: in [ceiling/2, ceiling], from 53 random bits of `random`.
    /// One draw, never a loop: a generator that repeats one value (tests
    /// inject them) cannot stall it.
    public func delay(afterFailures failures: Int, random: inout some RandomNumberGenerator) -> UInt64 {
        let ceiling = Double(self.ceiling(afterFailures: failures))
        let unit = Double(random.next() >> 11) * 0x1p-53  // [0, 1), 53 random bits
        let delay = ceiling / 2 + ceiling / 2 * unit
        // A ceiling near UInt64.max can round up to 2^64, which UInt64 cannot hold.
        return delay < 0x1p64 ? UInt64(delay) : .max
    }
}
