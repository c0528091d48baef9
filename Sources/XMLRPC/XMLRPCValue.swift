// XML-RPC's values (the specification at xmlrpc.com/spec.md, and what
// Python's xmlrpc.client writes and reads, pyapns' clients being Python).

import RelayCore

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
    /// The date and time; UTC in pyapns' feedback (XML-RPC has no zone).
    public var date: UTCDateTime

    /// The date and time of `text`, or nil when it is not a valid date in
    /// xmlrpc.client's form (years 1 to 9999, as Python's datetime has them).
    public init?(text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 17, bytes[8] == UInt8(ascii: "T"), bytes[11] == UInt8(ascii: ":"),
              bytes[14] == UInt8(ascii: ":"),
              let year = Self.number(bytes[0..<4]), let month = Self.number(bytes[4..<6]),
              let day = Self.number(bytes[6..<8]), let hour = Self.number(bytes[9..<11]),
              let minute = Self.number(bytes[12..<14]), let second = Self.number(bytes[15..<17]),
              let date = UTCDateTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        self.date = date
    }

    /// The UTC date and time of `unixSeconds`, kept within the years 1 to
    /// 9999 that the four-digit form can write (RelayCore's `UTCDateTime`:
    /// proleptic Gregorian, as Python's datetime is).
    public init(unixSeconds: Int) {
        date = UTCDateTime(unixSeconds: unixSeconds)
    }

    /// xmlrpc.client's form, e.g. `20261123T20:55:14`.
    public var text: String {
        let d = UTCDateTime.digits
        return d(date.year, 4) + d(date.month, 2) + d(date.day, 2) + "T" + d(date.hour, 2) + ":"
            + d(date.minute, 2) + ":" + d(date.second, 2)
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }
}
