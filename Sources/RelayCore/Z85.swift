/// Extended Z85, as toot-relay and its iOS clients use it (WIRE.md §2.1).
///
/// ZeroMQ's Z85 (ZeroMQ RFC 32) only encodes multiples of four bytes. The
/// extension keeps the alphabet and big-endian grouping and encodes a trailing
/// group of 1, 2 or 3 bytes, read as a big-endian integer, as 2, 3 or 4 digits.
/// The encoded length is therefore `n / 4 * 5 + (n % 4 == 0 ? 0 : n % 4 + 1)`.
public enum Z85 {
    /// The 85 digits, in value order.
    public static let alphabet: [UInt8] = Array(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    /// Digit value of each byte, 0xFF for bytes outside the alphabet.
    package static let digitValues: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    /// Number of ASCII bytes `encode` produces for `byteCount` input bytes.
    @inlinable
    public static func encodedCount(_ byteCount: Int) -> Int {
        let remainder = byteCount % 4
        return byteCount / 4 * 5 + (remainder == 0 ? 0 : remainder + 1)
    }

    /// Encodes `bytes` to a String.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        encode(bytes, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the ASCII encoding of `bytes` to `output` (the hot path: no
    /// intermediate String).
    public static func encode(_ bytes: some Collection<UInt8>, into output: inout [UInt8]) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            encode(UnsafeRawBufferPointer(buffer), into: &output)
        }
        if done == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { encode($0, into: &output) }
        }
    }

    /// The two digits of every value below 85², first digit in the low byte
    /// (so a little-endian 16-bit store writes them in order): two of a
    /// group's five digits per lookup, and half the divisions.
    static let digitPairs: [UInt16] = {
        var table = [UInt16](repeating: 0, count: 85 * 85)
        for value in table.indices {
            table[value] = UInt16(alphabet[value / 85]) | UInt16(alphabet[value % 85]) << 8
        }
        return table
    }()

    /// Appends the ASCII encoding of `bytes` to `output`.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        let count = bytes.count
        let encoded = encodedCount(count)
        guard encoded > 0, let source = bytes.baseAddress else { return }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: encoded))
        alphabet.withUnsafeBufferPointer { digitTable in
            digitPairs.withUnsafeBufferPointer { pairTable in
                output.withUnsafeMutableBufferPointer { out in
                    // Non-empty: `encoded` > 0 elements were just appended.
                    guard let digits = digitTable.baseAddress, let pairs = pairTable.baseAddress,
                          let outBase = out.baseAddress else { return }
                    encodeGroups(source, count: count, to: UnsafeMutableRawPointer(outBase + start),
                                 digits: digits, pairs: pairs)
                }
            }
        }
    }

    /// Writes the encoding of `bytes` at `target`, which must have room for
    /// `encodedCount(bytes.count)` bytes (the payload writer checks).
    static func encode(_ bytes: UnsafeRawBufferPointer, to target: UnsafeMutableRawPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        alphabet.withUnsafeBufferPointer { digitTable in
            digitPairs.withUnsafeBufferPointer { pairTable in
                guard let digits = digitTable.baseAddress, let pairs = pairTable.baseAddress else { return }
                encodeGroups(source, count: bytes.count, to: target, digits: digits, pairs: pairs)
            }
        }
    }

    /// Writes the `encodedCount(count)` digits of `source[0..<count]` at `target`.
    @inline(__always)
    private static func encodeGroups(_ source: UnsafeRawPointer, count: Int, to target: UnsafeMutableRawPointer,
                                     digits: UnsafePointer<UInt8>, pairs: UnsafePointer<UInt16>) {
        var target = target
        var read = 0
        let fullGroupsEnd = count & ~3
        while read < fullGroupsEnd {
            // A big-endian 32-bit word is five base-85 digits d0…d4:
            // d0 = value / 85⁴, d1d2 = value / 85² mod 85², d3d4 = value mod 85².
            let value = source.loadUnaligned(fromByteOffset: read, as: UInt32.self).bigEndian
            let high = value / 7225
            let top = high / 7225
            target.storeBytes(of: digits[Int(top)], as: UInt8.self)
            target.storeBytes(of: pairs[Int(high &- top &* 7225)].littleEndian, toByteOffset: 1, as: UInt16.self)
            target.storeBytes(of: pairs[Int(value &- high &* 7225)].littleEndian, toByteOffset: 3, as: UInt16.self)
            read += 4
            target += 5
        }
        guard read < count else { return }
        // The extension: a trailing group of n = 1…3 bytes, read as a
        // big-endian integer, becomes n + 1 digits.
        var value: UInt32 = 0
        for index in read..<count { value = value << 8 | UInt32(source.load(fromByteOffset: index, as: UInt8.self)) }
        var position = count - read
        while position >= 0 {
            target.storeBytes(of: digits[Int(value % 85)], toByteOffset: position, as: UInt8.self)
            value /= 85
            position -= 1
        }
    }

    /// Decodes extended Z85 text.
    ///
    /// Rejects bytes outside the alphabet, a trailing group of a single digit
    /// (no byte count maps to it), and groups whose value does not fit their
    /// width (e.g. `%nSc1` > 2³²−1, `31` > 255).
    public static func decode(_ text: some StringProtocol) throws(Z85Error) -> [UInt8] {
        let utf8 = Array(text.utf8)
        // withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
        let result = utf8.withUnsafeBytes { buffer in
            Result { () throws(Z85Error) -> [UInt8] in try decode(buffer) }
        }
        return try result.get()
    }

    /// Decodes extended Z85 given as ASCII bytes.
    public static func decode(_ text: UnsafeRawBufferPointer) throws(Z85Error) -> [UInt8] {
        let count = text.count
        let remainder = count % 5
        if remainder == 1 { throw .danglingDigit }
        var output: [UInt8] = []
        output.reserveCapacity(count / 5 * 4 + (remainder == 0 ? 0 : remainder - 1))
        var offset = 0
        while offset < count {
            let groupLength = min(5, count - offset)
            let byteCount = groupLength - 1
            var value: UInt64 = 0
            for index in offset..<(offset + groupLength) {
                let digit = digitValues[Int(text[index])]
                if digit == 0xFF { throw .invalidCharacter(offset: index) }
                value = value * 85 + UInt64(digit)
            }
            if value >> UInt64(8 * byteCount) != 0 { throw .overflow(offset: offset) }
            var shift = 8 * (byteCount - 1)
            while shift >= 0 {
                output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
                shift -= 8
            }
            offset += groupLength
        }
        return output
    }
}

/// Why a text is not valid extended Z85.
public enum Z85Error: Error, Equatable, Sendable {
    /// The byte at `offset` is not one of the 85 digits.
    case invalidCharacter(offset: Int)
    /// The text ends in a group of one digit, which encodes no byte count.
    case danglingDigit
    /// The group starting at `offset` encodes a value too large for its width.
    case overflow(offset: Int)
}
