/// A header list packed into one byte buffer: outgoing (validated, handed to
/// nghttp2, which copies it) or received (as nghttp2 reported it). A session
/// keeps one of each and reuses its storage, so a request costs no
/// allocation here once the buffers have grown to the usual size.
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
        /// HPACK "never indexed" (RFC 7541 §6.2.3): for values unique to one
        /// request, which would only churn both dynamic tables.
        var neverIndexed = false
    }

    private(set) var bytes: [UInt8] = []
    private(set) var fields: [Field] = []

    init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
        fields.reserveCapacity(16)
    }

    /// Empties the block, keeping its storage for the next one.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// The size RFC 9113 §6.5.2 accounts for the list: name + value + 32 per field.
    var listSize: Int { bytes.count + 32 * fields.count }

    /// Appends a pseudo-header field (`:method`, `:path`, …), whose name we
    /// choose ourselves; only the value is checked.
    mutating func appendPseudo(_ name: String, _ value: String) throws(HTTP2Error) {
        let field = append(name: name, value: value)
        let valid = field.valueCount > 0 && bytes.withUnsafeBufferPointer { all in
            Self.isValidValue(UnsafeBufferPointer(rebasing: all[field.valueStart..<field.valueStart + field.valueCount]))
        }
        guard valid else {
            dropLast(field)
            throw .invalidUse("invalid value for \(name)")
        }
    }

    /// Appends a regular field supplied by the caller.
    mutating func appendRegular(name: String, value: String, neverIndexed: Bool = false) throws(HTTP2Error) {
        var field = append(name: name, value: value)
        // Checked in place, once copied: a pointer walk, not a String walk.
        let problem = bytes.withUnsafeBufferPointer { all -> RegularFieldProblem? in
            let nameBytes = UnsafeBufferPointer(rebasing: all[field.nameStart..<field.nameStart + field.nameCount])
            let valueBytes = UnsafeBufferPointer(rebasing: all[field.valueStart..<field.valueStart + field.valueCount])
            if !Self.isValidName(nameBytes) { return .invalidName }
            if Self.isConnectionSpecific(nameBytes) { return .connectionSpecific }
            if !Self.isValidValue(valueBytes) { return .invalidValue }
            return nil
        }
        switch problem {
        case nil:
            field.neverIndexed = neverIndexed
            fields[fields.count - 1] = field
        case .invalidName:
            dropLast(field)
            throw .invalidUse("invalid header name \"\(name)\"")
        case .connectionSpecific:
            dropLast(field)
            throw .invalidUse("connection-specific header \"\(name)\" is not allowed in HTTP/2")
        case .invalidValue:
            dropLast(field)
            throw .invalidUse("invalid value for header \"\(name)\"")
        }
    }

    private enum RegularFieldProblem {
        case invalidName, connectionSpecific, invalidValue
    }

    @discardableResult
    private mutating func append(name: String, value: String) -> Field {
        let nameStart = bytes.count
        bytes.append(contentsOf: name.utf8)
        let valueStart = bytes.count
        bytes.append(contentsOf: value.utf8)
        let field = Field(nameStart: nameStart, nameCount: valueStart - nameStart,
                          valueStart: valueStart, valueCount: bytes.count - valueStart)
        fields.append(field)
        return field
    }

    /// Takes back the field just appended (it was refused).
    private mutating func dropLast(_ field: Field) {
        fields.removeLast()
        bytes.removeSubrange(field.nameStart...)
    }

    /// Appends a received field as is (nghttp2 has validated it).
    mutating func appendReceived(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        fields.append(Field(
            nameStart: nameStart, nameCount: valueStart - nameStart,
            valueStart: valueStart, valueCount: bytes.count - valueStart))
    }

    func name(at index: Int) -> String {
        let field = fields[index]
        return String(decoding: bytes[field.nameStart..<field.nameStart + field.nameCount], as: UTF8.self)
    }

    func value(at index: Int) -> String {
        let field = fields[index]
        return String(decoding: bytes[field.valueStart..<field.valueStart + field.valueCount], as: UTF8.self)
    }

    func nameEquals(_ name: String, at index: Int) -> Bool {
        let field = fields[index]
        return bytes[field.nameStart..<field.nameStart + field.nameCount].elementsEqual(name.utf8)
    }

    func valueEquals(_ value: String, at index: Int) -> Bool {
        let field = fields[index]
        return bytes[field.valueStart..<field.valueStart + field.valueCount].elementsEqual(value.utf8)
    }

    /// RFC 9110 §5.1 token characters, lowercase only (RFC 9113 §8.2.1).
    static func isValidName(_ name: some Collection<UInt8>) -> Bool {
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
    static func isValidValue(_ value: some Collection<UInt8>) -> Bool {
        if let first = value.first, first == 0x20 || first == 0x09 { return false }
        var last: UInt8 = 0
        for byte in value {
            if byte == 0x00 || byte == 0x0a || byte == 0x0d { return false }
            last = byte
        }
        return last != 0x20 && last != 0x09
    }

    /// RFC 9113 §8.2.2: these fields make a message malformed.
    static func isConnectionSpecific(_ name: some Collection<UInt8>) -> Bool {
        // By length first: most names are ruled out without a comparison.
        switch name.count {
        case 7: name.elementsEqual("upgrade".utf8)
        case 10: name.elementsEqual("connection".utf8) || name.elementsEqual("keep-alive".utf8)
        case 16: name.elementsEqual("proxy-connection".utf8)
        case 17: name.elementsEqual("transfer-encoding".utf8)
        default: false
        }
    }
}
