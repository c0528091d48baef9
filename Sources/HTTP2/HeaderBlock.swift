/// An outgoing header list, validated and packed into one byte buffer so that
/// handing it to nghttp2 costs one allocation, not one per field.
///
/// Pseudo-header fields come first (RFC 9113 §8.3: they MUST precede regular
/// fields); regular field names must be lowercase tokens (§8.2.1) and must not
/// be connection-specific (§8.2.2); values must not contain NUL, CR or LF and
/// must not start or end with whitespace (§8.2.1). A peer treats a violation as
/// a malformed message, so we refuse it before it reaches the wire.
struct HeaderBlock {
    /// Location of one field inside `bytes`.
    struct Field {
        var nameStart: Int
        var nameCount: Int
        var valueStart: Int
        var valueCount: Int
    }

    private(set) var bytes: [UInt8] = []
    private(set) var fields: [Field] = []

    init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// Appends a pseudo-header field (`:method`, `:path`, …), whose name we
    /// choose ourselves; only the value is checked.
    mutating func appendPseudo(_ name: String, _ value: String) throws(HTTP2Error) {
        guard !value.isEmpty, Self.isValidValue(value.utf8) else {
            throw .invalidUse("invalid value for \(name)")
        }
        append(name: name, value: value)
    }

    /// Appends a regular field supplied by the caller.
    mutating func appendRegular(name: String, value: String) throws(HTTP2Error) {
        guard Self.isValidName(name.utf8) else {
            throw .invalidUse("invalid header name \"\(name)\"")
        }
        guard !Self.isConnectionSpecific(name) else {
            throw .invalidUse("connection-specific header \"\(name)\" is not allowed in HTTP/2")
        }
        guard Self.isValidValue(value.utf8) else {
            throw .invalidUse("invalid value for header \"\(name)\"")
        }
        append(name: name, value: value)
    }

    private mutating func append(name: String, value: String) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name.utf8)
        let valueStart = bytes.count
        bytes.append(contentsOf: value.utf8)
        fields.append(Field(
            nameStart: nameStart, nameCount: valueStart - nameStart,
            valueStart: valueStart, valueCount: bytes.count - valueStart))
    }

    /// RFC 9110 §5.1 token characters, lowercase only (RFC 9113 §8.2.1).
    static func isValidName(_ name: String.UTF8View) -> Bool {
        guard !name.isEmpty else { return false }
        for byte in name {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                continue
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
                 UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
                 UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                continue
            default:
                return false
            }
        }
        return true
    }

    /// RFC 9113 §8.2.1: no NUL, CR or LF anywhere; no SP or HTAB at either end.
    static func isValidValue(_ value: String.UTF8View) -> Bool {
        if let first = value.first, first == 0x20 || first == 0x09 { return false }
        if let last = value.last, last == 0x20 || last == 0x09 { return false }
        for byte in value where byte == 0x00 || byte == 0x0a || byte == 0x0d {
            return false
        }
        return true
    }

    /// RFC 9113 §8.2.2: these fields make a message malformed.
    static func isConnectionSpecific(_ name: String) -> Bool {
        switch name {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
            true
        default:
            false
        }
    }
}
