import TestSupport
import Testing
@testable import RelayCore

struct Z85Tests {
    /// WIRE.md §2.1, every row of the table (hex → text).
    static let vectors: [(hex: String, text: String)] = [
        ("", ""),
        ("00", "00"),
        ("ff", "30"),
        ("ffff", "960"),
        ("ffffff", "rr90"),
        ("00000000", "00000"),
        ("ffffffff", "%nSc0"),
        ("864FD26FB559F75B", "HelloWorld"),
        ("864FD26FB559F75B01", "HelloWorld01"),
        ("864FD26FB559F75Bffffff", "HelloWorldrr90"),
    ]

    @Test("encodes every vector of the design table", arguments: vectors)
    func encodesVector(hex: String, text: String) {
        #expect(Z85.encode(hexBytes(hex)) == text)
        var appended: [UInt8] = Array("prefix:".utf8)
        Z85.encode(hexBytes(hex), into: &appended)
        #expect(appended == Array("prefix:".utf8) + Array(text.utf8))
    }

    @Test("decodes every vector of the design table", arguments: vectors)
    func decodesVector(hex: String, text: String) throws {
        #expect(try Z85.decode(text) == hexBytes(hex))
    }

    @Test("encodedCount matches the encoder for every length up to 64")
    func encodedCount() {
        for length in 0...64 {
            #expect(Z85.encode([UInt8](repeating: 0xA5, count: length)).utf8.count == Z85.encodedCount(length))
        }
    }

    @Test("round-trips random bytes of every length from 0 to 5000")
    func roundTrip() throws {
        var generator = SeededGenerator(seed: 0x5A85)
        var failures: [Int] = []
        for length in 0...5000 {
            let bytes = generator.bytes(length)
            var text: [UInt8] = []
            Z85.encode(bytes, into: &text)
            let decoded = try text.withUnsafeBytes { try Z85.decode($0) }
            if text.count != Z85.encodedCount(length) || decoded != bytes { failures.append(length) }
        }
        #expect(failures.isEmpty, "lengths that did not round-trip: \(failures.prefix(10))")
    }

    /// The five digits of one big-endian 32-bit group, the plain way.
    static func referenceDigits(_ value: UInt32) -> String {
        var digits: [UInt8] = []
        var rest = value
        for _ in 0..<5 {
            digits.insert(Z85.alphabet[Int(rest % 85)], at: 0)
            rest /= 85
        }
        return String(decoding: digits, as: UTF8.self)
    }

    @Test("a full group at every digit boundary matches the plain base-85 digits", arguments: [
        0, 1, 84, 85, 7_224, 7_225, 7_226, 614_124, 614_125, 52_200_624, 52_200_625, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF,
    ] as [UInt32])
    func groupBoundaries(value: UInt32) {
        let bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        #expect(Z85.encode(bytes) == Self.referenceDigits(value))
    }

    @Test("random groups match the plain base-85 digits, from aligned and unaligned storage")
    func randomGroups() {
        var generator = SeededGenerator(seed: 0x2085)
        let bytes = generator.bytes(4 * 4096 + 1)
        let expected = stride(from: 1, to: bytes.count, by: 4).map { start in
            Self.referenceDigits(bytes[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }.joined()
        // bytes[1...] starts one byte past the array's (aligned) storage.
        #expect(Z85.encode(bytes[1...]) == expected)
        #expect(Z85.encode(Array(bytes[1...])) == expected)
    }

    @Test("encodes a non-contiguous collection like an array")
    func nonContiguous() {
        let bytes: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B, 0x01]
        #expect(Z85.encode(bytes.lazy.map { $0 }) == "HelloWorld01")
    }

    static let rejections: [(text: String, error: Z85Error)] = [
        ("0", .danglingDigit),
        ("HelloWorld0", .danglingDigit),
        ("Hello Worl", .invalidCharacter(offset: 5)),
        ("Hell\"", .invalidCharacter(offset: 4)),
        ("~~", .invalidCharacter(offset: 0)),
        ("é0", .invalidCharacter(offset: 0)),
        ("%nSc1", .overflow(offset: 0)),  // 2^32
        ("#####", .overflow(offset: 0)),
        ("31", .overflow(offset: 0)),  // 256 in one byte
        ("961", .overflow(offset: 0)),  // 65536 in two bytes
        ("rr91", .overflow(offset: 0)),  // 2^24 in three bytes
        ("HelloWorld####", .overflow(offset: 10)),
    ]

    @Test("rejects bad text with a typed error", arguments: rejections)
    func rejects(text: String, error: Z85Error) {
        #expect(throws: error) { try Z85.decode(text) }
    }
}

/// Bytes from a hex string written in a test table.
private func hexBytes(_ hex: String) -> [UInt8] {
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
