/// A seeded generator (SplitMix64) so that property tests reproduce exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = next()
            for _ in 0..<min(8, count - index) {
                result[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return result
    }
}

/// Bytes from a hex string written in a test table.
func hexBytes(_ hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var iterator = hex.utf8.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
        result.append(UInt8(nibble(high) << 4 | nibble(low)))
    }
    return result
}

private func nibble(_ character: UInt8) -> Int {
    switch character {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(character - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(character - UInt8(ascii: "a") + 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(character - UInt8(ascii: "A") + 10)
    default: 0
    }
}
