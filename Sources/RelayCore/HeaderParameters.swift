// Header fields whose values are `,`/`;`-separated `name=value` lists
// (Crypto-Key, Encryption): finding one parameter's value in place
// (RFC 9110 §5.6.4 quoted-strings, §5.6.3 whitespace).

/// The first `name=value` among header values that are `,`/`;`-separated
/// parameter lists (`dh=…;p256ecdsa=…`, `keyid=a;dh=…, keyid=b;dh=…`).
/// Names compare case-insensitively; whitespace around names, `=` and values
/// is tolerated; a value may be a quoted-string (RFC 9110 §5.6.4).
func parameterValue(named name: String, in values: [String]) -> String? {
    for value in values {
        var text = value
        let found = text.withUTF8 { bytes in
            firstParameter(named: name, in: bytes).map { parameterText(bytes[$0.range], quoted: $0.quoted) }
        }
        if let found { return String(decoding: found, as: UTF8.self) }
    }
    return nil
}

/// `parameterValue(named:in:)` over header values in place: the value's
/// bytes are a slice of the headers' unless it was a quoted-string.
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

private func parameterText(_ value: Slice<UnsafeBufferPointer<UInt8>>, quoted: Bool) -> [UInt8] {
    quoted ? unquoted(Array(value)) : Array(value)
}

/// Where the value of the first entry of `bytes` called `wanted` is (OWS
/// trimmed; `quoted` when it is a quoted-string still to unquote): the same
/// splitting as `parameters(in:)` (`,`/`;` outside quotes, entries without
/// `=` skipped). Scans in place.
private func firstParameter(named wanted: String, in bytes: UnsafeBufferPointer<UInt8>)
    -> (range: Range<Int>, quoted: Bool)? {
    var entryStart = 0
    var inQuotes = false
    var escaped = false
    var quotedValue = false
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if inQuotes {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = false
            }
        } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: ";") {
            if let value = parameterEntryValue(bytes[entryStart..<index], named: wanted.utf8) {
                return (value, quotedValue)
            }
            entryStart = index + 1
            quotedValue = false
        } else if byte == UInt8(ascii: "\"") {
            inQuotes = true
            quotedValue = true
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

/// Splits a parameter list into (lowercased name, value) pairs; entries
/// without `=` are skipped.
func parameters(in text: String) -> [(name: String, value: String)] {
    var result: [(name: String, value: String)] = []
    var entry: [UInt8] = []
    var inQuotes = false
    var escaped = false
    var quotedValue = false

    func finishEntry() {
        defer {
            entry.removeAll(keepingCapacity: true)
            quotedValue = false
        }
        guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { return }
        let name = trimmingOWS(entry[..<equals])
        guard !name.isEmpty else { return }
        var value = Array(trimmingOWS(entry[(equals + 1)...]))
        if quotedValue {
            // Remove the quotes and escapes kept while scanning.
            value = unquoted(value)
        }
        result.append((asciiLowercased(name), String(decoding: value, as: UTF8.self)))
    }

    for byte in text.utf8 {
        if inQuotes {
            entry.append(byte)
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = false
            }
            continue
        }
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: ";"):
            finishEntry()
        case UInt8(ascii: "\""):
            inQuotes = true
            quotedValue = true
            entry.append(byte)
        default:
            entry.append(byte)
        }
    }
    finishEntry()
    return result
}

/// The content of a quoted-string, escapes resolved; input that is not a
/// single quoted-string is returned as is.
private func unquoted(_ value: [UInt8]) -> [UInt8] {
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
