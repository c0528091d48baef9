// UTC calendar dates from unix time, by hand: one home for the log lines'
// timestamps (Relay's Logger), the pull endpoint's ISO 8601 `time`
// (Feedback) and pyapns' `dateTime.iso8601` (XMLRPC). Foundation's formatters would do the first, but loading them
// (FoundationEssentials and ICU's date code) grew the relay by 3 MiB at the
// first feedback pull (scripts/long-run --api, RELIABILITY.md §5), and its
// Gregorian calendar turns Julian before 1582 where Python's datetime, what
// pyapns' clients read, is proleptic Gregorian.

/// A UTC date and time to the second, proleptic Gregorian, years 1 to 9999
/// (what a four-digit year writes, and Python's datetime's range).
public struct UTCDateTime: Sendable, Equatable {
    public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int

    /// The date and time of `unixSeconds`, clamped to the years 1 to 9999.
    /// Howard Hinnant's `civil_from_days` ("chrono-Compatible Low-Level Date
    /// Algorithms").
    public init(unixSeconds: Int) {
        // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
        let seconds: Int = min(max(unixSeconds, -62_135_596_800), 253_402_300_799)
        let days: Int = floorDivision(seconds, 86_400)
        let secondOfDay: Int = seconds - days * 86_400
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
        let shifted: Int = days + 719_468  // days since 0000-03-01
        let era: Int = floorDivision(shifted, 146_097)
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

    /// The date and time of these fields, or nil when they name none
    /// (a 30 February, an hour 24, a year outside 1 to 9999). Seconds go to
    /// 61, as ISO 8601 allows leap seconds.
    public init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
              (1...Self.days(inMonth: month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...61).contains(second)
        else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
        (self.hour, self.minute, self.second) = (hour, minute, second)
    }

    /// Days in `month` (1–12) of `year`, Gregorian leap years.
    public static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `value` in decimal, zero-padded to `count` digits (a non-negative
    /// field of a date).
    public static func digits(_ value: Int, _ count: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, count - text.count)) + text
    }
}

/// Unix milliseconds as ISO 8601 UTC text with milliseconds
/// (`2023-11-14T22:13:20.123Z`, RFC 3339's form), for times before 1970
/// too; clamped to the years 1 to 9999 like `UTCDateTime`.
public func iso8601UTCText(unixMilliseconds: Int64) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(24)
    appendISO8601UTC(unixMilliseconds: unixMilliseconds, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
}

/// Appends what `iso8601UTCText` returns, as bytes: the log lines'
/// timestamps and the feedback list's `time` are the one format.
public func appendISO8601UTC(unixMilliseconds: Int64, to output: inout [UInt8]) {
    let milliseconds = Int(unixMilliseconds)
    let date = UTCDateTime(unixSeconds: floorDivision(milliseconds, 1000))
    // The remainder taken directly: seconds × 1000 would overflow near Int.min.
    let millisecond = (milliseconds % 1000 + 1000) % 1000
    // Each field zero-padded to its width, then the separator after it.
    let fields: [(value: Int, width: Int, then: Unicode.Scalar)] = [
        (date.year, 4, "-"), (date.month, 2, "-"), (date.day, 2, "T"), (date.hour, 2, ":"),
        (date.minute, 2, ":"), (date.second, 2, "."), (millisecond, 3, "Z"),
    ]
    for field in fields {
        var divisor = 1
        for _ in 1..<field.width { divisor *= 10 }
        while divisor > 0 {
            output.append(UInt8(ascii: "0") + UInt8(field.value / divisor % 10))
            divisor /= 10
        }
        output.append(UInt8(ascii: field.then))
    }
}

/// The quotient rounded down (towards minus infinity), for times before 1970.
private func floorDivision(_ dividend: Int, _ divisor: Int) -> Int {
    let quotient = dividend / divisor
    return dividend % divisor < 0 ? quotient - 1 : quotient
}
