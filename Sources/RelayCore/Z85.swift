/// Extended Z85, as toot-relay and its iOS clients use it (DESIGN §2).
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
    static let digitValues: [UInt8] = {
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

    /// Appends the ASCII encoding of `bytes` to `output`.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        let count = bytes.count
        let fullGroups = count / 4
        let remainder = count % 4
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: encodedCount(count)))
        alphabet.withUnsafeBufferPointer { digits in
            output.withUnsafeMutableBufferPointer { out in
                var write = start
                var read = 0
                for _ in 0..<fullGroups {
                    var value = UInt32(bytes[read]) << 24 | UInt32(bytes[read + 1]) << 16
                        | UInt32(bytes[read + 2]) << 8 | UInt32(bytes[read + 3])
                    var position = write + 4
                    while position >= write {
                        out[position] = digits[Int(value % 85)]
                        value /= 85
                        position -= 1
                    }
                    read += 4
                    write += 5
                }
                if remainder != 0 {
                    var value: UInt32 = 0
                    for index in read..<count { value = value << 8 | UInt32(bytes[index]) }
                    var position = write + remainder
                    while position >= write {
                        out[position] = digits[Int(value % 85)]
                        value /= 85
                        position -= 1
                    }
                }
            }
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
