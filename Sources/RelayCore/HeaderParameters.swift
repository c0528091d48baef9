// Header fields whose values are `,`/`;`-separated `name=value` lists
// (Crypto-Key, Encryption): finding one parameter's value in place
// (RFC 9110 §5.6.4 quoted-strings, §5.6.3 whitespace).

import HTTPCore

/// The first `name=value` among header values that are `,`/`;`-separated
/// parameter lists (`dh=…;p256ecdsa=…`, `keyid=a;dh=…, keyid=b;dh=…`).
/// Names compare case-insensitively; whitespace around names, `=` and values
/// is tolerated; a value may be a quoted-string (RFC 9110 §5.6.4). Read in
/// place: the value's bytes are a slice of the headers' unless it was a
/// quoted-string.
///
/// Mastodon's Crypto-Key (`dh=…;p256ecdsa=…`) would otherwise cost a name and
/// a value String per parameter on every request.
func parameterValueBytes(named name: String, in values: HTTPHeaders.ValueBytes) -> ArraySlice<UInt8>? {
    for value in values {
        let found = value.withUnsafeBufferPointer { firstParameter(named: name, in: $0) }
        guard let found else { continue }
        let bytes = value[(value.startIndex + found.range.lowerBound)..<(value.startIndex + found.range.upperBound)]
        return found.quoted ? ArraySlice(unquoted(Array(bytes))) : bytes
    }
    return nil
}

/// The value of every entry called `name` in one parameter-list value, in
/// order, quoted-strings unquoted (VAPID's `t=`/`k=` and `p256ecdsa=`,
/// where a second entry of the same name must be seen, not ignored).
public func parameterValues(named name: String, in value: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
    var found: [ArraySlice<UInt8>] = []
    value.withUnsafeBufferPointer { buffer in
        var start = 0
        // Each search resumes after the value it found: the rest begins with
        // white space or a separator, never inside a quoted-string.
        while start < buffer.count,
              let next = firstParameter(named: name, in: UnsafeBufferPointer(rebasing: buffer[start...])) {
            let range = (start + next.range.lowerBound)..<(start + next.range.upperBound)
            let bytes = value[(value.startIndex + range.lowerBound)..<(value.startIndex + range.upperBound)]
            found.append(next.quoted ? ArraySlice(unquoted(Array(bytes))) : bytes)
            start = max(range.upperBound, start + 1)
        }
    }
    return found
}

/// Where the value of the first entry of `bytes` called `wanted` is (OWS
/// trimmed; `quoted` when it is a quoted-string still to unquote). Entries
/// are split at `,`/`;` outside quotes; entries without `=` are skipped.
/// Scans in place.
package func firstParameter(named wanted: String, in bytes: UnsafeBufferPointer<UInt8>)
    -> (range: Range<Int>, quoted: Bool)? {
    var entryStart = 0
    var quotes = QuoteTracker()
    var quotedValue = false
    var index = 0
    while index < bytes.count {
        switch quotes.role(of: bytes[index]) {
        case .separator:
            if let value = parameterEntryValue(bytes[entryStart..<index], named: wanted.utf8) {
                return (value, quotedValue)
            }
            entryStart = index + 1
            quotedValue = false
        case .openingQuote:
            quotedValue = true
        case .quoted, .other:
            break
        }
        index += 1
    }
    return parameterEntryValue(bytes[entryStart..<bytes.count], named: wanted.utf8).map { ($0, quotedValue) }
}

/// The range of the entry's value if the entry is `wanted=value`.
private func parameterEntryValue(_ entry: Slice<UnsafeBufferPointer<UInt8>>, named wanted: String.UTF8View)
    -> Range<Int>? {
    guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { return nil }
    let name = trimmingOWS(entry[..<equals])
    guard !name.isEmpty, asciiCaseInsensitiveEquals(name, wanted) else { return nil }
    let value = trimmingOWS(entry[(equals + 1)...])
    return value.startIndex..<value.endIndex
}

/// The content of a quoted-string, escapes resolved; input that is not a
/// single quoted-string is returned as is.
package func unquoted(_ value: [UInt8]) -> [UInt8] {
    guard value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") else { return value }
    var output: [UInt8] = []
    var escaped = false
    for byte in value[1..<(value.count - 1)] {
        if !escaped && byte == UInt8(ascii: "\\") {
            escaped = true
            continue
        }
        escaped = false
        output.append(byte)
    }
    return output
}

/// What a byte of a parameter list is, given the bytes before it: the one
/// definition of where quoted-strings (RFC 9110 §5.6.4: `"`, with `\`
/// escaping the next byte) begin and end.
package struct QuoteTracker {
    package enum Role { case separator, openingQuote, quoted, other }

    private var inQuotes = false
    private var escaped = false

    package init() {}

    /// `quoted`: inside a quoted-string, its closing quote included.
    package mutating func role(of byte: UInt8) -> Role {
        if inQuotes {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = false
            }
            return .quoted
        }
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: ";"): return .separator
        case UInt8(ascii: "\""):
            inQuotes = true
            return .openingQuote
        default: return .other
        }
    }
}
