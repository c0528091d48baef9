// The body of `GET /api/feedback/<app>`: the entries a take
// returned, as JSON, written with the JSON module's one string escaping
// and RelayCore's UTC dates. Not Foundation's JSONEncoder and date
// formatting: loading them grows the relay by 3 MiB at the first pull
// (FoundationEssentials and ICU pages; scripts/long-run --api,
// RELIABILITY.md §5), for four fixed keys and one date format.

import JSON
import RelayCore

/// `[{"environment"[,"platform"],"reason","time","token"}, …]` (keys sorted: the same
/// bytes for the same entries), oldest first. `time` is ISO 8601 text in
/// UTC with milliseconds (`2026-11-23T20:57:37.123Z`): what pyapns'
/// `feedback` gives as `dateTime.iso8601`, readable by people and by every
/// JSON client's date parser, where bare unix milliseconds would need the
/// unit documented at each use. `environment` is `production` or
/// `development`, as the relay's URLs write it. `platform` only for an FCM
/// registration token (`"android"`, gorush's name): an APNs entry reads as
/// it always has, and a client that knows no FCM meets no new field.
public func feedbackJSON(_ entries: [FeedbackEntry]) -> [UInt8] {
    var output: [UInt8] = [UInt8(ascii: "[")]
    output.reserveCapacity(2 + entries.count * 160)
    for (index, entry) in entries.enumerated() {
        if index > 0 { output.append(UInt8(ascii: ",")) }
        output += Array(#"{"environment":""#.utf8)
        appendJSONStringContent(entry.environment.rawValue, to: &output)
        if entry.platform != .ios {
            output += Array(#"","platform":""#.utf8)
            appendJSONStringContent(entry.platform.rawValue, to: &output)
        }
        output += Array(#"","reason":""#.utf8)
        appendJSONStringContent(entry.reason, to: &output)
        output += Array(#"","time":""#.utf8)
        appendJSONStringContent(feedbackTimeText(unixMilliseconds: entry.time), to: &output)
        output += Array(#"","token":""#.utf8)
        appendJSONStringContent(entry.token, to: &output)
        output += Array(#""}"#.utf8)
    }
    output.append(UInt8(ascii: "]"))
    return output
}

/// Unix milliseconds as ISO 8601 UTC text with milliseconds, as the pull
/// endpoint writes `time` (and pyapns' `feedback` may reuse).
public func feedbackTimeText(unixMilliseconds: Int64) -> String {
    iso8601UTCText(unixMilliseconds: unixMilliseconds)
}
