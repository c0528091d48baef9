/// Base64 (RFC 4648) decoding and unpadded base64url encoding.
///
/// Decoding is deliberately lenient where leniency is unambiguous, because a
/// 400 makes Mastodon delete the subscription:
/// - both alphabets are accepted, even mixed: base64url (`-`, `_`, RFC 4648 §5)
///   and standard base64 (`+`, `/`, §4) share no digit, so a value means the same
///   either way (Web Push says base64url, but P12_BASE64 and some senders use the
///   standard alphabet);
/// - padding is optional, but when present it must be complete (length a
///   multiple of 4, at most two `=`, nothing after it);
/// - unused low bits of the last digit are ignored (Go's decoder, which the
///   original relay used, does the same).
/// Rejected: any other byte (including whitespace; callers trim), and a length
/// that leaves a single digit in the last group (it cannot encode a byte).
public enum Base64URLError: Error, Equatable, Sendable {
    /// The byte at `offset` is neither a digit of either alphabet nor padding.
    case invalidCharacter(offset: Int)
    /// The number of digits cannot come from any byte count (4n + 1).
    case invalidLength
    /// Padding is present but malformed.
    case invalidPadding
}

/// Decodes base64url or standard base64, with or without padding.
public func base64URLDecode(_ text: some StringProtocol) throws(Base64URLError) -> [UInt8] {
    // withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
    func decode(_ buffer: UnsafeRawBufferPointer) -> Result<[UInt8], Base64URLError> {
        Result { () throws(Base64URLError) -> [UInt8] in try base64URLDecode(buffer) }
    }
    // Native strings are decoded in place; others through a copy.
    let result = text.utf8.withContiguousStorageIfAvailable { decode(UnsafeRawBufferPointer($0)) }
        ?? Array(text.utf8).withUnsafeBytes(decode)
    return try result.get()
}

/// Decodes base64url or standard base64 given as ASCII bytes.
public func base64URLDecode(_ text: UnsafeRawBufferPointer) throws(Base64URLError) -> [UInt8] {
    var digitCount = text.count
    var padding = 0
    while digitCount > 0 && text[digitCount - 1] == UInt8(ascii: "=") {
        digitCount -= 1
        padding += 1
    }
    // With the total a multiple of 4 and at most two `=`, the padding is exactly
    // what the digit count needs (4n+2 digits → `==`, 4n+3 → `=`).
    if padding > 0 && (padding > 2 || text.count % 4 != 0) { throw .invalidPadding }
    if digitCount % 4 == 1 { throw .invalidLength }

    // Reserved (exactly: 4n digits → 3n bytes, 4n+2 → 3n+1, 4n+3 → 3n+2)
    // then appended. Not Array(repeating:count:) nor
    // Array(unsafeUninitializedCapacity:): they reach the array buffer
    // through an unspecialised entry point that looks the storage type up in
    // the runtime's generic metadata cache on every call (perf: 0.3 µs per
    // request for the two decodes).
    var output: [UInt8] = []
    output.reserveCapacity(digitCount * 3 / 4)
    var accumulator: UInt32 = 0
    var bits = 0
    for index in 0..<digitCount {
        let value = base64DigitValue(text[index])
        if value == 0xFF {
            // A `=` here is padding in the middle of the text.
            throw text[index] == UInt8(ascii: "=") ? .invalidPadding : .invalidCharacter(offset: index)
        }
        accumulator = accumulator << 6 | UInt32(value)
        bits += 6
        if bits >= 8 {
            bits -= 8
            output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            accumulator &= (1 << UInt32(bits)) - 1
        }
    }
    return output
}

/// Encodes to base64url without padding (RFC 4648 §5; RFC 7515 §2 for JWT).
public func base64URLEncode(_ bytes: some Collection<UInt8>) -> String {
    var output: [UInt8] = []
    output.reserveCapacity(base64Count(bytes.count, padded: false))
    forEachBase64URLDigit(of: bytes, padded: false) { output.append($0) }
    return String(decoding: output, as: UTF8.self)
}

/// Length of the base64 of `byteCount` bytes (RFC 4648 §4; §3.2 padding).
@inlinable
public func base64Count(_ byteCount: Int, padded: Bool) -> Int {
    padded ? (byteCount + 2) / 3 * 4 : (byteCount * 4 + 2) / 3
}

/// The one definition of base64url encoding (RFC 4648 §5): hands each digit
/// to `emit`, then with `padded` the `=` that complete the last group.
@inlinable @inline(__always)
public func forEachBase64URLDigit(of bytes: some Sequence<UInt8>, padded: Bool, _ emit: (UInt8) -> Void) {
    var accumulator: UInt32 = 0
    var bits = 0
    var digits = 0
    for byte in bytes {
        accumulator = accumulator << 8 | UInt32(byte)
        bits += 8
        while bits >= 6 {
            bits -= 6
            emit(base64URLDigit(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits) & 0x3F)))
            digits += 1
        }
        accumulator &= (1 << UInt32(bits)) - 1
    }
    if bits > 0 {
        emit(base64URLDigit(UInt8(truncatingIfNeeded: accumulator << UInt32(6 - bits) & 0x3F)))
        digits += 1
    }
    if padded {
        while digits % 4 != 0 {
            emit(UInt8(ascii: "="))
            digits += 1
        }
    }
}

/// The base64url digit of a 6-bit value. Computed, like `base64DigitValue`.
@inlinable @inline(__always)
func base64URLDigit(_ value: UInt8) -> UInt8 {
    switch value {
    case 0..<26: UInt8(ascii: "A") + value
    case 26..<52: UInt8(ascii: "a") + value - 26
    case 52..<62: UInt8(ascii: "0") + value - 52
    case 62: UInt8(ascii: "-")
    default: UInt8(ascii: "_")
    }
}

/// True when every byte of `text` is in the base64url alphabet (no padding):
/// the syntax of an RFC 8030 §5.4 Topic.
@inlinable
public func isBase64URLAlphabet(_ text: some Sequence<UInt8>) -> Bool {
    text.allSatisfy { $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") && base64DigitValue($0) != 0xFF }
}

/// Value of `byte` as a digit of either alphabet, 0xFF otherwise. Computed
/// rather than looked up: a global table costs a lazy-initialisation check
/// (swift_once) on every access.
@inlinable @inline(__always)
package func base64DigitValue(_ byte: UInt8) -> UInt8 {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
    case UInt8(ascii: "-"), UInt8(ascii: "+"): 62
    case UInt8(ascii: "_"), UInt8(ascii: "/"): 63
    default: 0xFF
    }
}
