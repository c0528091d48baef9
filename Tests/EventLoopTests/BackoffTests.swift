import EventLoop
import Testing
import TestSupport

@Suite("Backoff")
struct BackoffTests {
    static let ceilingCases: [(base: UInt64, cap: UInt64, failures: Int, ceiling: UInt64)] = [
        // The APNs pool's defaults, in milliseconds: 0.5 s doubled up to 15 s.
        (500, 15_000, 1, 500), (500, 15_000, 2, 1_000), (500, 15_000, 5, 8_000),
        (500, 15_000, 6, 15_000), (500, 15_000, 100, 15_000), (500, 15_000, .max, 15_000),
        // Fewer than one failure count as one.
        (500, 15_000, 0, 500), (500, 15_000, -3, 500),
        // A base at or above the cap is the cap.
        (20_000, 15_000, 1, 15_000), (15_000, 15_000, 3, 15_000),
        // The doubling stops at 2^30 times the base.
        (1, .max, 31, 1 << 30), (1, .max, 40, 1 << 30), (3, .max, 1_000, 3 << 30),
        // A doubling beyond UInt64 is the cap, not a wrap-around.
        (UInt64.max / 2, .max, 3, .max), (1 << 40, 1 << 62, 31, 1 << 62),
        (0, 1_000, 10, 0),
    ]

    @Test("the ceiling doubles from the base per failure, stops at the cap, and never overflows",
          arguments: ceilingCases)
    func ceiling(_ example: (base: UInt64, cap: UInt64, failures: Int, ceiling: UInt64)) {
        let backoff = Backoff(base: example.base, cap: example.cap)
        #expect(backoff.ceiling(afterFailures: example.failures) == example.ceiling)
    }

    static let delayCases: [(ceiling: UInt64, word: UInt64, delay: UInt64)] = [
        // Random part 0: half the ceiling (rounded down).
        (1_000, 0, 500), (5, 0, 2), (1, 0, 0),
        // 53 random bits: the top bit alone is half the random half.
        (1_000, 1 << 63, 750), (100_000_000, 1 << 63, 75_000_000),
        // The 11 low bits are not used.
        (1_000, (1 << 63) | 0x7FF, 750), (1_000, 0x7FF, 500),
        // All ones: the full ceiling (1 − 2^−53 of it rounds up).
        (1_000_000_000, .max, 1_000_000_000), (15_000_000_000, .max, 15_000_000_000), (7, .max, 7),
        // A ceiling near UInt64.max cannot make the delay overflow.
        (.max, 0, 1 << 63), (.max, .max, .max),
    ]

    @Test("the delay is half the ceiling plus the random word's share of the other half", arguments: delayCases)
    func delay(_ example: (ceiling: UInt64, word: UInt64, delay: UInt64)) {
        let backoff = Backoff(base: example.ceiling, cap: example.ceiling)
        var random = FixedRandom(values: [example.word])
        #expect(backoff.delay(afterFailures: 1, random: &random) == example.delay)
    }

    @Test("the delay lies between half its ceiling and the ceiling, and spreads over that range")
    func jitterRange() {
        let backoff = Backoff(base: 1_000, cap: 60_000)
        var random = SeededGenerator(seed: 21)
        for failures in 1...10 {
            let ceiling = backoff.ceiling(afterFailures: failures)
            var seen = Set<UInt64>()
            for _ in 0..<200 {
                let delay = backoff.delay(afterFailures: failures, random: &random)
                #expect(delay >= ceiling / 2 && delay <= ceiling)
                seen.insert(delay)
            }
            #expect(seen.count > 50, "200 draws over \(ceiling / 2 + 1) values should rarely repeat")
        }
    }
}
