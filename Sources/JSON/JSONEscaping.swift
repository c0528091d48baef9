// Escaping text for the inside of a JSON string (RFC 8259 §7), for the
// payloads' `x`, `i`, `s` and `k` (and every string the relay writes):
// counted and written by one definition. Inlinable: the Web Push payload
// writers in RelayCore count and write `x` through it on every request.

/// Appends `text` escaped for the inside of a JSON string (RFC 8259 §7):
/// `"` and `\` escaped, control characters as short forms or \u00XX,
/// everything else (non-ASCII UTF-8, `/`, `<`, `>`, `&`) passed through.
@inlinable
public func appendJSONStringContent(_ text: String, to output: inout [UInt8]) {
    forEachJSONEscapedByte(text.utf8) { output.append($0) }
}

/// Appends `text` as a quoted JSON string. Inlinable: the payload writers
/// of other modules call it for every string they write.
@inlinable
public func appendJSONString(_ text: String, to output: inout [UInt8]) {
    output.append(UInt8(ascii: "\""))
    appendJSONStringContent(text, to: &output)
    output.append(UInt8(ascii: "\""))
}

/// Bytes the escaping writes for `text` (UTF-8).
@inlinable
public func jsonEscapedCount(_ text: some Sequence<UInt8>) -> Int {
    var count = 0
    forEachJSONEscapedByte(text) { _ in count += 1 }
    return count
}

/// The one definition of the escaping: hands each output byte of `text`
/// (UTF-8) to `emit`.
@inlinable @inline(__always)
public func forEachJSONEscapedByte(_ text: some Sequence<UInt8>, _ emit: (UInt8) -> Void) {
    for byte in text {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            emit(UInt8(ascii: "\\"))
            emit(byte)
        case 0x08:
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "b"))
        case 0x0C:
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "f"))
        case UInt8(ascii: "\n"):
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"):
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"):
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "t"))
        case 0..<0x20:
            for escaped in #"\u00"#.utf8 { emit(escaped) }
            emit(lowercaseHexDigit(byte >> 4))
            emit(lowercaseHexDigit(byte & 0x0F))
        default:
            emit(byte)
        }
    }
}

@usableFromInline @inline(__always)
func lowercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
}
