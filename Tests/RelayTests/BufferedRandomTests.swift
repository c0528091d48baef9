import Testing

@testable import Relay

@Suite("BufferedRandom")
struct BufferedRandomTests {
    @Test("words across several refills are distinct and use every bit")
    func distinctAcrossRefills() {
        var random = BufferedRandom()
        let count = BufferedRandom.wordsPerRefill * 3 + 7
        var seen = Set<UInt64>()
        var orBits: UInt64 = 0
        var andBits: UInt64 = .max
        for _ in 0..<count {
            let word = random.next()
            seen.insert(word)
            orBits |= word
            andBits &= word
        }
        // 64-bit words from the kernel: a collision among 1,543 has
        // probability ~1e-13; a stuck bit among all of them ~2^-1543.
        #expect(seen.count == count)
        #expect(orBits == .max)
        #expect(andBits == 0)
    }

    @Test("two generators do not repeat each other")
    func independentGenerators() {
        var first = BufferedRandom()
        var second = BufferedRandom()
        let a = (0..<16).map { _ in first.next() }
        let b = (0..<16).map { _ in second.next() }
        #expect(a != b)
    }
}
