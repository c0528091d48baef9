// XML-RPC's values (the specification at xmlrpc.com/spec.md, and what
// Python's xmlrpc.client writes and reads, pyapns' clients being Python).

/// One XML-RPC value.
public indirect enum XMLRPCValue: Sendable, Equatable {
    /// `<int>`, `<i4>`, and `<i8>` (the extension xmlrpc.client reads too).
    case int(Int)
    /// `<boolean>`: `0` or `1`.
    case boolean(Bool)
    /// `<string>`, or a `<value>` with text and no type element.
    case string(String)
    /// `<double>`: finite only (JSON, where pyapns' doubles go, has no
    /// infinity or NaN).
    case double(Double)
    /// `<dateTime.iso8601>`, without a time zone (XML-RPC has none; pyapns'
    /// feedback times are UTC here).
    case dateTime(XMLRPCDateTime)
    /// `<base64>`: bytes.
    case base64([UInt8])
    /// `<struct>`: members in document order.
    case structure([XMLRPCMember])
    /// `<array>`.
    case array([XMLRPCValue])
    /// `<nil/>` (the extension xmlrpc.client writes with allow_none, and
    /// Twisted's server, pyapns' host, with allowNone).
    case `nil`

    /// The element name XML-RPC gives the value's type, for messages.
    public var typeName: String {
        switch self {
        case .int: "int"
        case .boolean: "boolean"
        case .string: "string"
        case .double: "double"
        case .dateTime: "dateTime.iso8601"
        case .base64: "base64"
        case .structure: "struct"
        case .array: "array"
        case .nil: "nil"
        }
    }
}

/// One member of an XML-RPC struct.
public struct XMLRPCMember: Sendable, Equatable {
    public var name: String
    public var value: XMLRPCValue

    public init(name: String, value: XMLRPCValue) { (self.name, self.value) = (name, value) }
}

/// A `dateTime.iso8601` value as xmlrpc.client writes and reads it:
/// `YYYYMMDDTHH:MM:SS` (strftime "%Y%m%dT%H:%M:%S"), no zone.
public struct XMLRPCDateTime: Sendable, Equatable {
    public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int

    /// The date and time of `text`, or nil when it is not a valid date in
    /// xmlrpc.client's form (years 1 to 9999, as Python's datetime has them).
    public init?(text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 17, bytes[8] == UInt8(ascii: "T"), bytes[11] == UInt8(ascii: ":"),
              bytes[14] == UInt8(ascii: ":"),
              let year = Self.number(bytes[0..<4]), let month = Self.number(bytes[4..<6]),
              let day = Self.number(bytes[6..<8]), let hour = Self.number(bytes[9..<11]),
              let minute = Self.number(bytes[12..<14]), let second = Self.number(bytes[15..<17]),
              year >= 1, (1...12).contains(month), (1...Self.days(inMonth: month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...61).contains(second)
        else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
        (self.hour, self.minute, self.second) = (hour, minute, second)
    }

    /// The UTC date and time of `unixSeconds`, kept within the years 1 to
    /// 9999 that the four-digit form can write. Computed by hand (Howard
    /// Hinnant's `civil_from_days`, "chrono-Compatible Low-Level Date
    /// Algorithms"): Python's datetime is proleptic Gregorian, and
    /// Foundation's Gregorian calendar turns Julian before 1582.
    public init(unixSeconds: Int) {
        // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
        let seconds: Int = min(max(unixSeconds, -62_135_596_800), 253_402_300_799)
        let days: Int = Self.floorDivision(seconds, 86_400)
        let secondOfDay: Int = seconds - days * 86_400
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
        let shifted: Int = days + 719_468  // days since 0000-03-01
        let era: Int = Self.floorDivision(shifted, 146_097)
        let dayOfEra: Int = shifted - era * 146_097
        let leapDays: Int = dayOfEra / 1460 - dayOfEra / 36_524 + dayOfEra / 146_096
        let yearOfEra: Int = (dayOfEra - leapDays) / 365
        let yearStart: Int = 365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100
        let dayOfYear: Int = dayOfEra - yearStart
        let monthIndex: Int = (5 * dayOfYear + 2) / 153  // March is 0
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let marchYear: Int = yearOfEra + era * 400
        year = month <= 2 ? marchYear + 1 : marchYear
    }

    /// xmlrpc.client's form, e.g. `20261123T20:55:14`.
    public var text: String {
        Self.digits(year, 4) + Self.digits(month, 2) + Self.digits(day, 2) + "T" + Self.digits(hour, 2) + ":"
            + Self.digits(minute, 2) + ":" + Self.digits(second, 2)
    }

    private static func digits(_ value: Int, _ count: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, count - text.count)) + text
    }

    private static func floorDivision(_ dividend: Int, _ divisor: Int) -> Int {
        let quotient = dividend / divisor
        return dividend % divisor < 0 ? quotient - 1 : quotient
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    private static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
