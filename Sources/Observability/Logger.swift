import EventLoop
import Glibc
import RelayCore

/// One line per event on standard error: `2026-01-02T03:04:05.678Z info message`.
///
/// Each line is written with a single write(2), so lines from several loop
/// threads never interleave (writes to a pipe of at most PIPE_BUF bytes are
/// atomic; longer lines are cut to stay under it). Never give it a payload, a
/// secret or a full device token: `tokenPrefix(_:)` is what a log may show.
public final class Logger: Sendable {
    public let level: LogLevel
    private let sink: @Sendable (UnsafeRawBufferPointer) -> Void

    /// Longest line written (PIPE_BUF on Linux: writes up to it are atomic).
    public static let maxLineBytes = 4096

    /// `sink` receives finished lines, each ending in a newline: one line per
    /// call from `log`, several (at most `maxLineBytes` in all) from a
    /// `LoopLogBuffer`. The default writes them to standard error.
    public init(level: LogLevel, sink: @escaping @Sendable (UnsafeRawBufferPointer) -> Void = Logger.standardError) {
        self.level = level
        self.sink = sink
    }

    public static let standardError: @Sendable (UnsafeRawBufferPointer) -> Void = { line in
        _ = Glibc.write(STDERR_FILENO, line.baseAddress, line.count)
    }

    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// Logs `message` (built only when `level` is enabled) as one line.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        var line: [UInt8] = []
        line.reserveCapacity(160)
        appendLine(level, message(), to: &line)
        line.withUnsafeBytes { sink($0) }
    }

    /// Logs the message that `message` appends as UTF-8 bytes (called only
    /// when `level` is enabled) as one line: the same line as `log(_:_:)`
    /// with that text, without building a String first.
    public func log(_ level: LogLevel, building message: (inout [UInt8]) -> Void) {
        guard isEnabled(level) else { return }
        var line: [UInt8] = []
        line.reserveCapacity(160)
        appendLine(level, to: &line, building: message)
        line.withUnsafeBytes { sink($0) }
    }

    /// Hands finished lines (one or more, each ending in a newline) to the sink.
    func write(_ lines: UnsafeRawBufferPointer) { sink(lines) }

    /// Appends `message` as one finished line (timestamp, level, newline),
    /// at most `maxLineBytes` long.
    func appendLine(_ level: LogLevel, _ message: String, to line: inout [UInt8]) {
        appendLine(level, to: &line) { $0.append(contentsOf: message.utf8) }
    }

    /// Appends one finished line (timestamp, level, the bytes `message`
    /// appends, newline), at most `maxLineBytes` long.
    func appendLine(_ level: LogLevel, to line: inout [UInt8], building message: (inout [UInt8]) -> Void) {
        let start = line.count
        Logger.appendTimestamp(unixNanoseconds: Logger.realtimeNanoseconds(), to: &line)
        appendLevelAndMessage(level, to: &line, start: start, building: message)
    }

    /// `appendLine(_:to:building:)` with the date and time formatted once a
    /// second (`timestamps`), for a loop writing many lines a second.
    func appendLine(_ level: LogLevel, to line: inout [UInt8], timestamps: inout TimestampCache,
                    building message: (inout [UInt8]) -> Void) {
        let start = line.count
        timestamps.append(unixNanoseconds: Logger.realtimeNanoseconds(), to: &line)
        appendLevelAndMessage(level, to: &line, start: start, building: message)
    }

    /// The rest of a line whose timestamp starts at `start`.
    private func appendLevelAndMessage(_ level: LogLevel, to line: inout [UInt8], start: Int,
                                       building message: (inout [UInt8]) -> Void) {
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: level.name.utf8)
        line.append(UInt8(ascii: " "))
        let messageStart = line.count
        message(&line)
        let end = min(line.count, start + Logger.maxLineBytes - 1)
        if line.count > end { line.removeSubrange(end...) }
        for index in messageStart..<max(messageStart, end) {
            // One event, one line: control characters from lower layers
            // (OpenSSL messages, peer-supplied text) become spaces.
            let byte = line[index]
            if byte < 0x20 || byte == 0x7F { line[index] = UInt8(ascii: " ") }
        }
        line.append(UInt8(ascii: "\n"))
    }

    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    static func realtimeNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// RFC 3339 UTC with milliseconds, computed without Foundation
    /// (RelayCore's `appendISO8601UTC`, the relay's one date format).
    static func appendTimestamp(unixNanoseconds: Int64, to line: inout [UInt8]) {
        appendISO8601UTC(unixMilliseconds: unixNanoseconds / 1_000_000, to: &line)
    }
}

/// The date and time of the current second as `appendTimestamp` writes
/// them (`2026-01-02T03:04:05.`), kept to format only the milliseconds of
/// the lines that follow in the same second.
struct TimestampCache {
    private var second = Int64.min
    private var prefix: [UInt8] = []

    /// Appends what `Logger.appendTimestamp` would.
    mutating func append(unixNanoseconds: Int64, to line: inout [UInt8]) {
        let second = unixNanoseconds / 1_000_000_000
        guard unixNanoseconds >= 0, second == self.second else {
            let start = line.count
            Logger.appendTimestamp(unixNanoseconds: unixNanoseconds, to: &line)
            if unixNanoseconds >= 0 {
                // Up to and including the "." before the milliseconds.
                prefix = Array(line[start..<(line.count - 4)])
                self.second = second
            }
            return
        }
        line.append(contentsOf: prefix)
        let milliseconds = Int(unixNanoseconds % 1_000_000_000 / 1_000_000)
        line.append(UInt8(ascii: "0") + UInt8(milliseconds / 100))
        line.append(UInt8(ascii: "0") + UInt8(milliseconds / 10 % 10))
        line.append(UInt8(ascii: "0") + UInt8(milliseconds % 10))
        line.append(UInt8(ascii: "Z"))
    }
}

/// What a log line may show of a device token: its first 8 hex digits.
public func tokenPrefix(_ token: String) -> String {
    // Tokens are hex by the time they are logged; a non-ASCII byte (never
    // expected) still shows as one Latin-1 character.
    let prefix = token.utf8.prefix(8)
    if prefix.allSatisfy({ $0 < 0x80 }) { return String(decoding: prefix, as: UTF8.self) }
    return String(prefix.map { Character(Unicode.Scalar($0)) })
}

/// Appends `tokenPrefix(token)` as UTF-8 without making a String (the hex
/// digits of a token are ASCII).
func appendTokenPrefix(_ token: String, to line: inout [UInt8]) {
    // In place for a native String (a copy through the generic path cost
    // more than the rest of the line).
    let appended: Bool? = token.utf8.withContiguousStorageIfAvailable { utf8 in
        let prefix = UnsafeBufferPointer(rebasing: utf8.prefix(8))
        guard prefix.allSatisfy({ $0 < 0x80 }) else { return false }
        line.append(contentsOf: prefix)
        return true
    }
    if appended != true { line.append(contentsOf: tokenPrefix(token).utf8) }
}
