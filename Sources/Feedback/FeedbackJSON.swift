// The body of `GET /api/feedback/<app>` (issue #13): the entries a take
// returned, as JSON. Foundation's JSONEncoder writes it (off the hot path:
// once per poll).

import Foundation

/// `[{"token","environment","reason","time"}, …]`, oldest first. `time` is
/// ISO 8601 text in UTC with milliseconds (`2026-11-23T20:57:37.123Z`): what
/// pyapns' `feedback` gives as `dateTime.iso8601`, readable by people and by
/// every JSON client's date parser, where bare unix milliseconds would need
/// the unit documented at each use. `environment` is `production` or
/// `development`, as the relay's URLs write it.
public func feedbackJSON(_ entries: [FeedbackEntry]) -> [UInt8] {
    let encoder = JSONEncoder()
    // Sorted keys: the same bytes for the same entries; slashes need no escape.
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let items = entries.map {
        FeedbackItem(token: $0.token, environment: $0.environment.rawValue, reason: $0.reason,
                     time: feedbackTimeText(unixMilliseconds: $0.time))
    }
    // Encoding strings and arrays of them cannot fail; a failure would be a
    // Foundation bug, and an empty list is still a valid answer.
    return (try? Array(encoder.encode(items))) ?? Array("[]".utf8)
}

/// Unix milliseconds as ISO 8601 UTC text with milliseconds, as the pull
/// endpoint writes `time` (and pyapns' `feedback` may reuse).
public func feedbackTimeText(unixMilliseconds: Int64) -> String {
    // Foundation formats the whole seconds; the milliseconds are appended
    // from the integer, as a Date (a Double since 2001) would round
    // 1700000000123 ms to …20.122.
    let (seconds, milliseconds) = unixMilliseconds.floorDivided(by: 1000)
    let date = Date(timeIntervalSince1970: Double(seconds))
    let text = date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))  // 2023-11-14T22:13:20Z
    let digits = String(milliseconds)
    return "\(text.dropLast()).\(String(repeating: "0", count: 3 - digits.count))\(digits)Z"
}

extension Int64 {
    /// Quotient rounded down and a remainder in 0..<divisor, for times
    /// before 1970 too.
    fileprivate func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = self % divisor
        return remainder < 0 ? (self / divisor - 1, remainder + divisor) : (self / divisor, remainder)
    }
}

private struct FeedbackItem: Encodable {
    var token: String
    var environment: String
    var reason: String
    var time: String
}
