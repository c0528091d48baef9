// The byte-level syntax of HTTP fields (RFC 9110 §5.5, §5.6): tokens,
// optional whitespace, comma-separated lists, what a field value may not
// contain. Shared by the request parser, the header accessors and the Web
// Push validation; inlinable, as ASCII.swift's helpers are, so the modules
// above get them specialized.

/// Whether `byte` is a `tchar` of RFC 9110 §5.6.2, the bytes allowed in a
/// token (method, field name): `!#$%&'*+-.^_`|~`, digits and letters. Two
/// bit masks over ASCII rather than a global table, whose every access paid
/// a lazy-initialisation check (swift_once).
@inlinable @inline(__always)
public func isTokenByte(_ byte: UInt8) -> Bool {
    if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(byte) & 1 != 0 }
    if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(byte - 64) & 1 != 0 }
    return false
}

@inlinable @inline(__always)
func isOWS(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

/// Calls `body` with each element of a comma-separated list (RFC 9110
/// §5.6.1), untrimmed, without collecting them into an array.
@inlinable
public func forEachListElement(of value: ArraySlice<UInt8>, omittingEmpty: Bool = true,
                        _ body: (ArraySlice<UInt8>) -> Void) {
    var start = value.startIndex
    var index = start
    while index < value.endIndex {
        if value[index] == UInt8(ascii: ",") {
            if !omittingEmpty || index > start { body(value[start..<index]) }
            start = index + 1
        }
        index += 1
    }
    if !omittingEmpty || value.endIndex > start { body(value[start..<value.endIndex]) }
}

/// The bytes without leading and trailing optional whitespace (SP, HTAB;
/// RFC 9110 §5.6.3).
@inlinable
public func trimmingOWS<C: BidirectionalCollection>(_ bytes: C) -> C.SubSequence where C.Element == UInt8 {
    var start = bytes.startIndex
    var end = bytes.endIndex
    while start < end, isOWS(bytes[start]) {
        start = bytes.index(after: start)
    }
    while end > start {
        let last = bytes.index(before: end)
        guard isOWS(bytes[last]) else { break }
        end = last
    }
    return bytes[start..<end]
}

/// Whether `bytes` hold a control character other than HTAB, or DEL: never
/// allowed in a field value (RFC 9110 §5.5), a trailer or a chunk extension.
/// Eight bytes at a time (SWAR): a word with no byte below 0x20 and none
/// equal to 0x7F is skipped; one that might have either (a tab does) is
/// checked byte by byte. A byte loop here would be most of the time spent on a head.
func containsControlCharacter(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highBits: UInt64 = 0x8080_8080_8080_8080
    var index = 0
    let count = bytes.count
    while index + 8 <= count {
        let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        // Some byte < 0x20 (bytes >= 0x80 never flag: `~word` clears them).
        let below = (word &- ones &* 0x20) & ~word & highBits
        // Some byte == 0x7F.
        let delete = word ^ (ones &* 0x7F)
        let isDelete = (delete &- ones) & ~delete & highBits
        if below | isDelete != 0 {
            for offset in index..<(index + 8) where isForbiddenInFieldValue(bytes[offset]) { return true }
        }
        index += 8
    }
    while index < count {
        if isForbiddenInFieldValue(bytes[index]) { return true }
        index += 1
    }
    return false
}

@inlinable @inline(__always)
public func isForbiddenInFieldValue(_ byte: UInt8) -> Bool {
    (byte < 0x20 && byte != UInt8(ascii: "\t")) || byte == 0x7F
}

/// Whether two field values are the same text: byte-equal, or (only when
/// non-ASCII bytes are involved) equal as Strings, which is what comparing
/// String values did (invalid UTF-8 repaired, canonical equivalence).
@inlinable
public func sameFieldValue(_ left: some Collection<UInt8>, _ right: some Collection<UInt8>) -> Bool {
    if left.elementsEqual(right) { return true }
    guard left.contains(where: { $0 >= 0x80 }) || right.contains(where: { $0 >= 0x80 }) else { return false }
    return String(decoding: left, as: UTF8.self) == String(decoding: right, as: UTF8.self)
}
