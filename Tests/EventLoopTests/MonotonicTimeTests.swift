import EventLoop
import Testing

@Suite("Monotonic time")
struct MonotonicTimeTests {
    @Test("a deadline adds the delay in nanoseconds and saturates", arguments: [
        (Duration.seconds(10), UInt64(5), UInt64(10_000_000_005)),
        (Duration.milliseconds(1), UInt64(0), UInt64(1_000_000)),
        (Duration.nanoseconds(1), UInt64(0), UInt64(1)),
        (Duration.zero, UInt64(7), UInt64(7)),
        (Duration.seconds(-1), UInt64(7), UInt64(7)),
        (Duration.seconds(Int64.max), UInt64(1), UInt64.max),
        (Duration.seconds(1), UInt64.max - 10, UInt64.max),
    ])
    func deadlines(delay: Duration, base: UInt64, expected: UInt64) {
        #expect(EventLoop.deadline(after: delay, from: base) == expected)
    }

    @Test("a duration becomes whole nanoseconds, negative ones zero, huge ones the maximum", arguments: [
        (Duration.seconds(2), UInt64(2_000_000_000)),
        (Duration.milliseconds(1500), UInt64(1_500_000_000)),
        (Duration.microseconds(3), UInt64(3_000)),
        (Duration.milliseconds(-5), UInt64(0)),
        (Duration.seconds(Int64.max), UInt64.max),
    ])
    func saturatingNanoseconds(duration: Duration, expected: UInt64) {
        #expect(duration.saturatingNanoseconds == expected)
    }
}

@Suite("Blocking call")
struct BlockingCallTests {
    @Test("runAndWait runs the body on the loop thread and returns its value")
    func runsOnTheLoopThread() throws {
        let thread = try EventLoopThread(name: "blocking-test")
        defer { thread.stopAndJoin() }
        let loop = thread.loop
        #expect(!loop.isOnLoopThread)
        let (value, onLoop) = loop.runAndWait { (41 + 1, loop.isOnLoopThread) }
        #expect(value == 42)
        #expect(onLoop)
    }

    @Test("runAndWait called on the loop's own thread runs inline instead of waiting for itself")
    func runsInlineOnTheLoopThread() throws {
        let thread = try EventLoopThread(name: "blocking-test")
        defer { thread.stopAndJoin() }
        let loop = thread.loop
        let nested = loop.runAndWait { loop.runAndWait { "inner" } + " and outer" }
        #expect(nested == "inner and outer")
    }
}
