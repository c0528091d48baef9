/// The warning for pushes to an app the relay does not have, at most once a
/// minute per loop: a server with thousands of subscriptions on a mistyped
/// or dropped app sends a push for each, and one line a minute says as much
/// as all of them. Bounded: it keeps a time and a count, never the ids.
struct UnknownAppWarnings {
    static let interval: UInt64 = 60 * 1_000_000_000
    private var lastWarned: UInt64?
    private var suppressed = 0

    /// The warning to log now for a push to `name`, or nil while the last
    /// one is less than a minute old (counted, and told in the next).
    mutating func warning(about name: String, now: UInt64) -> String? {
        if let lastWarned, now &- lastWarned < Self.interval {
            suppressed += 1
            return nil
        }
        let more = suppressed == 0 ? "" : " (and \(suppressed) more pushes for apps the relay does not have since the last warning)"
        lastWarned = now
        suppressed = 0
        return "a push for \(name), which the relay does not have: answered 503 so senders keep the subscription; "
            + "add the app to APPS_FILE, or retire it there (retired = true) to answer 410" + more
    }
}

/// An id from a URL as a log line may show it: at most 64 bytes, anything
/// but printable ASCII (and `"`, `\`) as `?`, so a URL cannot forge lines.
func loggableName(_ name: String) -> String {
    let bytes = name.utf8.prefix(64).map { byte -> UInt8 in
        (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") ? byte : UInt8(ascii: "?")
    }
    return String(decoding: bytes, as: UTF8.self) + (name.utf8.count > 64 ? "…" : "")
}
