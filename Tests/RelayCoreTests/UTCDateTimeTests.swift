import Foundation
import RelayCore
import Testing

@Suite("UTC dates from unix time")
struct UTCDateTimeTests {
    static let table: [(milliseconds: Int64, text: String)] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
        (1_700_000_000_007, "2023-11-14T22:13:20.007Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),  // a leap day of a year divisible by 400
        (-2_203_891_200_000, "1900-03-01T00:00:00.000Z"),  // 1900 is no leap year
        (-30_610_224_000_000, "1000-01-01T00:00:00.000Z"),  // proleptic Gregorian, as Python's datetime
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        (253_402_300_800_000, "9999-12-31T23:59:59.000Z"),  // past 9999: clamped to its last second
        (.max, "9999-12-31T23:59:59.807Z"),
        (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
        (.min, "0001-01-01T00:00:00.192Z"),  // before year 1: clamped to its first second
    ]

    @Test("unix milliseconds become ISO 8601 UTC text, exact to the millisecond, clamped to the years 1 to 9999",
          arguments: table)
    func formats(row: (milliseconds: Int64, text: String)) {
        #expect(iso8601UTCText(unixMilliseconds: row.milliseconds) == row.text)
    }

    @Test("agrees with Foundation's Gregorian calendar on 10,000 random seconds from 1583 to 9999")
    func agreesWithFoundation() {
        // Foundation turns Julian before 1582-10-15, so the comparison starts after it.
        var generator = SystemRandomNumberGenerator()
        let style = Date.ISO8601FormatStyle(timeZone: .gmt)
        for _ in 0..<10_000 {
            let seconds = Int.random(in: -12_212_553_600...253_402_300_799, using: &generator)
            let expected = String(Date(timeIntervalSince1970: Double(seconds)).formatted(style).dropLast())
            let text = String(iso8601UTCText(unixMilliseconds: Int64(seconds) * 1000).dropLast(5))
            #expect(text == expected, "unix second \(seconds)")
        }
    }

    @Test("fields that name no date are refused", arguments: [
        (2025, 2, 29, 0, 0, 0), (2100, 2, 29, 0, 0, 0), (2026, 4, 31, 0, 0, 0), (2026, 13, 1, 0, 0, 0),
        (2026, 0, 1, 0, 0, 0), (0, 1, 1, 0, 0, 0), (10_000, 1, 1, 0, 0, 0), (2026, 1, 1, 24, 0, 0),
        (2026, 1, 1, 0, 60, 0), (2026, 1, 1, 0, 0, 62), (2026, 1, 0, 0, 0, 0),
    ])
    func refusesNonDates(fields: (Int, Int, Int, Int, Int, Int)) {
        let (year, month, day, hour, minute, second) = fields
        #expect(UTCDateTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second) == nil)
    }

    @Test("fields that name a date, leap days and a leap second included, are kept as given", arguments: [
        (2024, 2, 29, 0, 0, 0), (2000, 2, 29, 23, 59, 61), (1, 1, 1, 0, 0, 0), (9999, 12, 31, 23, 59, 59),
    ])
    func keepsDates(fields: (Int, Int, Int, Int, Int, Int)) throws {
        let (year, month, day, hour, minute, second) = fields
        let date = try #require(UTCDateTime(year: year, month: month, day: day, hour: hour, minute: minute,
                                            second: second))
        let kept: [Int] = [date.year, date.month, date.day, date.hour, date.minute, date.second]
        let given: [Int] = [year, month, day, hour, minute, second]
        #expect(kept == given)
    }
}
