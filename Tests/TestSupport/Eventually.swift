import Glibc

/// Polls `condition` every `interval` until it holds or `timeout` has
/// passed (CLOCK_MONOTONIC), and returns its last value. For effects that land
/// on another thread (an event loop, the emulator, a subprocess): bounded, so
/// no test can hang on it.
public func eventually(timeout: Duration = .seconds(5), interval: Duration = .milliseconds(5),
                       _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        guard clock.now < deadline else { return false }
        let (seconds, attoseconds) = interval.components
        usleep(UInt32(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }
    return true
}
