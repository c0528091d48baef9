// ASCII byte helpers for protocol text (tokens, field names, hex and
// decimal digits), which is ASCII by definition: Unicode case mapping and
// String comparison would be slower and wrong for it. Inlinable: RelayCore
// and the modules above call them per byte, and a generic one called across
// the module boundary unspecialized (witness tables, metadata lookups) made a
// Web Push request cost three times the instructions (callgrind: about
// 140,000 → 442,000 per notification, asciiLowercased alone half of it).

/// Whether `bytes` and `expected` are equal ignoring ASCII case (tokens,
/// field names: RFC 9110 §5.1, §5.6.2).
@inlinable
public func asciiCaseInsensitiveEquals(_ bytes: some Collection<UInt8>, _ expected: some Collection<UInt8>) -> Bool {
    guard bytes.count == expected.count else { return false }
    // Index loops rather than zip: with zip, its iterator is most of the cost.
    var index = bytes.startIndex
    var expectedIndex = expected.startIndex
    while index != bytes.endIndex {
        if asciiLowercase(bytes[index]) != asciiLowercase(expected[expectedIndex]) { return false }
        bytes.formIndex(after: &index)
        expected.formIndex(after: &expectedIndex)
    }
    return true
}

@inlinable @inline(__always)
func asciiLowercase(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
}

/// Lowercases ASCII letters only: header names and tokens are ASCII, and
/// Unicode case mapping would be both slower and wrong for them.
@inlinable
public func asciiLowercased(_ text: some StringProtocol) -> String {
    if !text.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) { return String(text) }
    return String(decoding: text.utf8.map(asciiLowercase), as: UTF8.self)
}

/// Lowercased string of the given ASCII bytes (written straight into the
/// String's storage: no intermediate array per header name).
@inlinable
public func asciiLowercased(_ bytes: some Collection<UInt8>) -> String {
    guard bytes.allSatisfy({ $0 < 0x80 }) else {
        // Not ASCII: decoding repairs invalid UTF-8.
        return String(decoding: bytes.map(asciiLowercase), as: UTF8.self)
    }
    return String(unsafeUninitializedCapacity: bytes.count) { buffer in
        var count = 0
        for byte in bytes {
            buffer[count] = asciiLowercase(byte)
            count += 1
        }
        return count
    }
}

@inlinable @inline(__always)
public func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

@inlinable @inline(__always)
public func hexValue(_ byte: UInt8) -> Int? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
    default: nil
    }
}
