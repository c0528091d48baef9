// A strict RFC 8259 parser, for the provider API's bodies and the answers
// and files of the push services.
//
// Written by hand, not Foundation's JSONSerialization or JSONDecoder: those
// turn numbers into Double/NSNumber (so `data` would not go to APNs as
// written: 12345678901234567890 and 1.50 change, and 1 and true blur on
// Linux) and keep the last of duplicate names silently, where the relay
// refuses them. Work is linear in the input and the nesting is capped, so a
// hostile body costs at most one pass over it (its caller bounds its size).

/// Why a body is not the JSON the parser accepts: where and what.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Offset of the offending byte in the body.
    public var offset: Int
    public var message: String

    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}

/// Parses one JSON text (RFC 8259 §2): whitespace, one value, whitespace.
/// Refuses what the RFC allows implementations to refuse and what the
/// provider API cannot send on exactly: bytes that are not UTF-8 (§8.1), a
/// byte order mark, lone surrogates in `\u` escapes (§8.2), duplicate object
/// names (§4 leaves them unpredictable), numbers beyond a double's range
/// (§6), and nesting deeper than `maximumDepth` (§9).
/// Inlinable: the copy into an array is specialised in the caller (the
/// provider API's bodies are arrays already), the parse is not generic.
@inlinable
public func parseStrictJSON(_ bytes: some Collection<UInt8>, maximumDepth: Int = strictJSONMaximumDepth)
    throws(JSONSyntaxError) -> JSONValue {
    try parseStrictJSON(buffer: Array(bytes), maximumDepth: maximumDepth)
}

@usableFromInline
func parseStrictJSON(buffer: [UInt8], maximumDepth: Int) throws(JSONSyntaxError) -> JSONValue {
    var parser = StrictJSONParser(bytes: buffer, maximumDepth: maximumDepth)
    parser.skipWhitespace()
    let value = try parser.parseValue(depth: 0)
    parser.skipWhitespace()
    if parser.position < buffer.count {
        throw parser.error("unexpected \(parser.describeByte()) after the JSON value")
    }
    return value
}

/// Arrays and objects nested deeper than this are refused: an APNs payload
/// (4 KB) has no use for more, and the parser recurses once per level.
public let strictJSONMaximumDepth = 64

private struct StrictJSONParser {
    let bytes: [UInt8]
    let maximumDepth: Int
    var position = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func error(_ message: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset ?? position, message: message)
    }

    /// The byte at the position, for messages: `'x'`, `byte 0x00` or "the end".
    func describeByte() -> String {
        guard position < bytes.count else { return "end of input" }
        let byte = bytes[position]
        if byte > 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard position < bytes.count else { throw error("unexpected end of input, a value was expected") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case 0xEF where bytes[position...].starts(with: [0xEF, 0xBB, 0xBF]):
            throw error("a byte order mark is not allowed (RFC 8259 §8.1)")
        default: throw error("unexpected \(describeByte()), a value was expected")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let text = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard bytes[position...].starts(with: text) else {
            throw error("unexpected \(describeByte()), a value was expected")
        }
        position += text.count
    }

    mutating func enter(_ depth: Int) throws(JSONSyntaxError) {
        if depth > maximumDepth {
            throw error("arrays and objects nested more than \(maximumDepth) deep")
        }
        position += 1
        skipWhitespace()
    }

    /// Just past an opening bracket: whether `closing` follows at once
    /// (then past it too).
    mutating func closesEmpty(_ closing: UInt8) -> Bool {
        guard position < bytes.count && bytes[position] == closing else { return false }
        position += 1
        return true
    }

    /// After an element of `what`: true when `closing` ends it, false after
    /// a comma; past either.
    mutating func endsContainer(_ closing: UInt8, _ what: String) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input in \(what)") }
        let byte = bytes[position]
        guard byte == UInt8(ascii: ",") || byte == closing else {
            throw error("unexpected \(describeByte()) in \(what), ',' or '\(Character(Unicode.Scalar(closing)))' was expected")
        }
        position += 1
        skipWhitespace()
        return byte == closing
    }

    mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        try enter(depth)
        var elements: [JSONValue] = []
        if closesEmpty(UInt8(ascii: "]")) { return .array(elements) }
        repeat {
            elements.append(try parseValue(depth: depth))
        } while try !endsContainer(UInt8(ascii: "]"), "an array")
        return .array(elements)
    }

    mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        try enter(depth)
        var members: [JSONMember] = []
        var names: Set<String> = []
        if closesEmpty(UInt8(ascii: "}")) { return .object(members) }
        repeat {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("unexpected \(describeByte()) in an object, a quoted name was expected")
            }
            let nameOffset = position
            let name = try parseString()
            guard names.insert(name).inserted else {
                throw error("the name \(quotedForMessage(name)) appears twice in one object", at: nameOffset)
            }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("unexpected \(describeByte()) after an object's name, ':' was expected")
            }
            position += 1
            skipWhitespace()
            members.append(JSONMember(name: name, value: try parseValue(depth: depth)))
        } while try !endsContainer(UInt8(ascii: "}"), "an object")
        return .object(members)
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259 §6).
    mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw error("a digit was expected in a number") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count && isDigit(bytes[position]) {
                throw error("a number cannot have a leading zero")
            }
        } else {
            skipDigits()
        }
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw error("a digit was expected after a decimal point")
            }
            skipDigits()
        }
        if position < bytes.count && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")) {
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")) {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else {
                throw error("a digit was expected in an exponent")
            }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        // RFC 8259 §6 lets a parser limit the range; beyond a double's, other
        // readers fail (Go's decoder, gorush's, refuses the request; Foundation
        // too), so APNs' might: refused here rather than sent.
        if position - start > 308 || text.utf8.contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
           !(Double(text)?.isFinite ?? false) {
            throw error("a number beyond the range of a double", at: start)
        }
        return text
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while position < bytes.count && isDigit(bytes[position]) { position += 1 }
    }

    /// A string (RFC 8259 §7) from its opening quote; its content must be
    /// UTF-8 (§8.1) without raw control characters.
    mutating func parseString() throws(JSONSyntaxError) -> String {
        position += 1
        let start = position
        // Plain printable ASCII up to the closing quote (device tokens, field
        // names, most values) becomes the String in one step: copying byte
        // by byte made the parse of a 100-token /api/push request 703,000
        // instructions, this 216,000 (callgrind, BENCHMARKS.md).
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return String(decoding: bytes[start..<(position - 1)], as: UTF8.self)
            }
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\\") { break }
            position += 1
        }
        var output = Array(bytes[start..<position])
        while true {
            guard position < bytes.count else { throw error("unexpected end of input in a string") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return String(decoding: output, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &output)
            case 0..<0x20:
                throw error("a control character (byte 0x\(String(byte, radix: 16, uppercase: true))) must be escaped in a string")
            case 0..<0x80:
                output.append(byte)
                position += 1
            default:
                try copyUTF8Sequence(into: &output)
            }
        }
    }

    mutating func parseEscape(into output: inout [UInt8]) throws(JSONSyntaxError) {
        let start = position
        position += 1
        guard position < bytes.count else { throw error("unexpected end of input in a string") }
        let letter = bytes[position]
        position += 1
        if let byte = shortEscapes[letter] {
            output.append(byte)
            return
        }
        guard letter == UInt8(ascii: "u") else { throw error("an unknown escape in a string", at: start) }
        var scalar = try hexQuad(escapeAt: start)
        if (0xDC00...0xDFFF).contains(scalar) {
            throw error("a lone low surrogate \\u\(String(scalar, radix: 16, uppercase: true))", at: start)
        }
        if (0xD800...0xDBFF).contains(scalar) {
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                  bytes[position + 1] == UInt8(ascii: "u") else {
                throw error("a high surrogate \\u\(String(scalar, radix: 16, uppercase: true)) without its low half", at: start)
            }
            position += 2
            let low = try hexQuad(escapeAt: start)
            guard (0xDC00...0xDFFF).contains(low) else {
                throw error("a high surrogate followed by \\u\(String(low, radix: 16, uppercase: true)), not a low one", at: start)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        // Not a surrogate here, so always a valid scalar.
        output.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
    }

    mutating func hexQuad(escapeAt start: Int) throws(JSONSyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("a \\u escape needs four hex digits", at: start) }
        var value: UInt32 = 0
        for byte in bytes[position..<(position + 4)] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("a \\u escape needs four hex digits", at: start)
            }
            value = value << 4 | UInt32(digit)
        }
        position += 4
        return value
    }

    /// Copies one multi-byte UTF-8 sequence (RFC 3629 §4: no overlong forms,
    /// no surrogates, nothing past U+10FFFF).
    mutating func copyUTF8Sequence(into output: inout [UInt8]) throws(JSONSyntaxError) {
        let lead = bytes[position]
        let length: Int
        var lowest: UInt8 = 0x80, highest: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lowest = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; highest = 0x9F
        case 0xF0: length = 4; lowest = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; highest = 0x8F
        default: throw error("bytes that are not UTF-8 in a string (RFC 8259 §8.1)")
        }
        guard position + length <= bytes.count else { throw error("bytes that are not UTF-8 in a string (RFC 8259 §8.1)") }
        for index in 1..<length {
            let byte = bytes[position + index]
            let (low, high) = index == 1 ? (lowest, highest) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= low && byte <= high else {
                throw error("bytes that are not UTF-8 in a string (RFC 8259 §8.1)")
            }
        }
        output.append(contentsOf: bytes[position..<(position + length)])
        position += length
    }
}

/// The two-character escapes of RFC 8259 §7: the letter and the byte it stands for.
private let shortEscapes: [UInt8: UInt8] = [
    UInt8(ascii: "\""): UInt8(ascii: "\""), UInt8(ascii: "\\"): UInt8(ascii: "\\"), UInt8(ascii: "/"): UInt8(ascii: "/"),
    UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
]

/// A name or value quoted for an error message: at most 40 characters,
/// control characters shown as `?`, so a message stays one short line.
public func quotedForMessage(_ text: String) -> String {
    let shown = text.unicodeScalars.prefix(40).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : String($0) }.joined()
    return "\"" + shown + (text.unicodeScalars.count > 40 ? "…\"" : "\"")
}
