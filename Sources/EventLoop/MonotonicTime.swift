/// Durations on the loop's clock: CLOCK_MONOTONIC in whole nanoseconds
/// (`EventLoop.now`, `EventLoop.monotonicNanoseconds()`). The one place a
/// `Duration` becomes nanoseconds; every timer, deadline and timeout in the
/// relay and the emulator goes through it.
extension Duration {
    /// Whole nanoseconds, saturating: a negative duration is 0, one beyond
    /// `UInt64` (about 584 years) is `UInt64.max`, so a configured timeout
    /// can never wrap around into the past.
    public var saturatingNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (sum, overflow2) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow2 ? .max : sum
    }
}

extension EventLoop {
    /// `base + delay` on the loop's clock, saturating at `UInt64.max` (a
    /// deadline that never comes); a negative delay is `base`.
    public static func deadline(after delay: Duration, from base: UInt64) -> UInt64 {
        let (deadline, overflow) = base.addingReportingOverflow(delay.saturatingNanoseconds)
        return overflow ? .max : deadline
    }
}
