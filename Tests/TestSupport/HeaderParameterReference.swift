// Reference forms of the header-parameter scan (Sources/RelayCore/
// HeaderParameters.swift), for RelayCore's tests and the web-push fuzz
// target: the whole list split into pairs, and a lookup over String values.
// The relay itself reads parameters in place with `parameterValueBytes`.

import HTTPCore
import RelayCore

/// `parameterValueBytes(named:in:)` over String header values.
public func parameterValue(named name: String, in values: [String]) -> String? {
    for value in values {
        var text = value
        let found = text.withUTF8 { bytes in
            firstParameter(named: name, in: bytes).map { found -> [UInt8] in
                let value = Array(bytes[found.range])
                return found.quoted ? unquoted(value) : value
            }
        }
        if let found { return String(decoding: found, as: UTF8.self) }
    }
    return nil
}

/// Splits a parameter list into (lowercased name, value) pairs; entries
/// without `=` are skipped.
public func parameters(in text: String) -> [(name: String, value: String)] {
    var result: [(name: String, value: String)] = []
    var entry: [UInt8] = []
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

    var quotes = QuoteTracker()
    for byte in text.utf8 {
        switch quotes.role(of: byte) {
        case .separator:
            finishEntry()
            continue
        case .openingQuote:
            quotedValue = true
        case .quoted, .other:
            break
        }
        entry.append(byte)
    }
    finishEntry()
    return result
}
