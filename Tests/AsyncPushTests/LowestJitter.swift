/// Always 0: the jitter's random part is 0, so a delay is half its ceiling.
/// It counts its draws, which also gives it storage of its own: a value of
/// no size has one address shared by every instance, and ThreadSanitizer
/// took parallel test cases' `inout` accesses to that address for a race.
struct LowestJitter: RandomNumberGenerator {
    private(set) var draws = 0

    mutating func next() -> UInt64 {
        draws += 1
        return 0
    }
}
