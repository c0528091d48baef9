import HTTPCore

extension APNsDelivery {
    /// The delivery an answer on a completed stream means: 200 is accepted;
    /// any other status carries the reason of APNs' error body and, for 410,
    /// its timestamp.
    package init(status: Int, apnsID: String?, body: [UInt8], retryAfterSeconds: Int? = nil) {
        guard status != 200 else {
            self.init(outcome: .apns(status: 200, reason: nil, apnsID: apnsID))
            return
        }
        let parsed = parseAPNsErrorBody(body)
        self.init(
            outcome: .apns(status: status, reason: parsed.reason.map(APNsReason.init(rawValue:)), apnsID: apnsID),
            unregisteredTimestamp: status == 410 ? parsed.timestamp : nil,
            retryAfterSeconds: status == 410 ? nil : retryAfterSeconds)
    }

    /// The longest `Retry-After` taken as given: a notification without
    /// `apns-expiration` is otherwise bounded only by its tries, and an
    /// answer saying "in a week" must not park it for a week.
    public static let maxRetryAfterSeconds = 3_600

    /// A `Retry-After` value in seconds (`retryAfterDelaySeconds`), at most
    /// `maxRetryAfterSeconds`. APNs documents none; a front before it, or a
    /// later APNs, may send one.
    public static func retryAfterSeconds(_ value: Substring.UTF8View) -> Int? {
        retryAfterDelaySeconds(value, atMost: maxRetryAfterSeconds)
    }
}

/// The fields of an APNs error body (`{"reason":"BadDeviceToken"}`,
/// `{"reason":"Unregistered","timestamp":1700000000000}`).
package struct APNsErrorBody: Equatable {
    package var reason: String?
    package var timestamp: Int64?
}

/// Reads `reason` and `timestamp` from a JSON object. A small hand parser:
/// error answers are rare and tiny, and a body that is not the expected
/// object simply yields no fields (the status alone still decides).
package func parseAPNsErrorBody(_ body: [UInt8]) -> APNsErrorBody {
    var parser = JSONObjectScanner(body)
    var result = APNsErrorBody()
    parser.scanTopLevelObject { key, value in
        switch (key, value) {
        case ("reason", .string(let text)): result.reason = text
        case ("timestamp", .number(let text)): result.timestamp = Int64(text)
        case ("timestamp", .string(let text)): result.timestamp = Int64(text)
        default: break
        }
    }
    return result
}

/// Just enough of RFC 8259 to read the members of one flat object.
struct JSONObjectScanner {
    enum Value {
        case string(String)
        case number(String)
        case other
    }

    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Calls `member` for each key and scalar value of the top-level object;
    /// stops quietly at the first syntax error.
    mutating func scanTopLevelObject(_ member: (String, Value) -> Void) {
        skipWhitespace()
        guard take(UInt8(ascii: "{")) else { return }
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return }
        while index < bytes.count {
            skipWhitespace()
            guard let key = scanString() else { return }
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { return }
            skipWhitespace()
            guard let value = scanValue() else { return }
            member(key, value)
            skipWhitespace()
            if take(UInt8(ascii: ",")) { continue }
            return
        }
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipWhitespace() {
        while index < bytes.count,
              bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
    }

    private mutating func scanValue() -> Value? {
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            return scanString().map(Value.string)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"),
                     UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
                    index += 1
                    continue
                default: break
                }
                break
            }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            return skipNested() ? .other : nil
        default:
            // true, false, null
            let start = index
            while index < bytes.count, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[index]) { index += 1 }
            return index > start ? .other : nil
        }
    }

    /// A string, with the escapes of RFC 8259 §7 decoded (\u escapes of the
    /// BMP; APNs reasons are ASCII anyway).
    private mutating func scanString() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        var text: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count,
                          let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                    else { return nil }
                    index += 4
                    let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                    text.append(contentsOf: String(Character(scalar)).utf8)
                default: text.append(escaped)
                }
            default:
                text.append(byte)
            }
        }
        return nil
    }

    private mutating func skipNested() -> Bool {
        var depth = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                guard scanString() != nil else { return false }
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 {
                    index += 1
                    return true
                }
            default: break
            }
            index += 1
        }
        return false
    }
}
