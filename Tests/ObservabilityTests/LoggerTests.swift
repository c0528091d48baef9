import EventLoop
import RelayCore
import Locking
import Testing

@testable import Observability

private final class Lines: Sendable {
    let storage = Locked<[String]>([])
    var all: [String] { storage.withLock { $0 } }
    func sink() -> @Sendable (UnsafeRawBufferPointer) -> Void {
        { bytes in
            let line = String(decoding: bytes, as: UTF8.self)
            self.storage.withLock { $0.append(line) }
        }
    }
}

@Suite("Logger")
struct LoggerTests {
    @Test("one line per event: UTC timestamp, level, message, newline")
    func lineShape() throws {
        let lines = Lines()
        let logger = Logger(level: .info, sink: lines.sink())
        logger.info("hello world")
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix(" info hello world\n"))
        // 2026-01-02T03:04:05.678Z
        let stamp = line.prefix(24)
        #expect(stamp.count == 24)
        #expect(stamp.last == "Z")
        #expect(Array(stamp.utf8)[10] == UInt8(ascii: "T"))
        #expect(line.filter { $0 == "\n" }.count == 1)
    }

    @Test("messages below the level are neither built nor written",
          arguments: [(LogLevel.debug, 4), (.info, 3), (.warning, 2), (.error, 1)])
    func levels(level: LogLevel, expected: Int) {
        let lines = Lines()
        let logger = Logger(level: level, sink: lines.sink())
        logger.debug("d")
        logger.info("i")
        logger.warning("w")
        logger.error("e")
        #expect(lines.all.count == expected)
    }

    @Test("control characters become spaces, so one event stays one line")
    func controlCharacters() throws {
        let lines = Lines()
        Logger(level: .debug, sink: lines.sink()).error("a\nb\rc\u{7F}d")
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix("error a b c d\n"))
    }

    @Test("long messages are cut to fit one atomic write")
    func longMessage() throws {
        let lines = Lines()
        Logger(level: .debug, sink: lines.sink()).info(String(repeating: "x", count: 10_000))
        let line = try #require(lines.all.first)
        #expect(line.utf8.count == Logger.maxLineBytes)
        #expect(line.hasSuffix("x\n"))
    }

    @Test("timestamps are RFC 3339 UTC", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (Int64(1_700_000_000_123_456_789), "2023-11-14T22:13:20.123Z"),
        (Int64(951_782_400_999_000_000), "2000-02-29T00:00:00.999Z"),
    ])
    func timestamps(nanoseconds: Int64, expected: String) {
        var bytes: [UInt8] = []
        Logger.appendTimestamp(unixNanoseconds: nanoseconds, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == expected)
    }

    @Test("a token shows only its first 8 hex digits", arguments: [
        ("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "01234567"),
        ("abc", "abc"),
    ])
    func tokenPrefixes(token: String, expected: String) {
        #expect(tokenPrefix(token) == expected)
    }

    @Test("a message built as bytes gives the line its String gives", arguments: [
        "hello world", "a\nb\rc\u{7F}d", "", "caf\u{E9}", String(repeating: "x", count: 10_000),
        String(repeating: "\u{E9}", count: 3_000),
    ])
    func builtMessage(message: String) throws {
        let lines = Lines()
        let logger = Logger(level: .debug, sink: lines.sink())
        logger.info(message)
        logger.log(.info) { $0.append(contentsOf: message.utf8) }
        let all = lines.all
        try #require(all.count == 2)
        // Same text after the timestamp (which may differ by a millisecond).
        // (Cut at the same byte, too: the sink decodes a cut character alike.)
        #expect(all[0].dropFirst(24) == all[1].dropFirst(24))
    }

    @Test("a message built as bytes below the level is not built")
    func builtMessageBelowLevel() {
        let lines = Lines()
        let logger = Logger(level: .warning, sink: lines.sink())
        var built = false
        logger.log(.info) { _ in built = true }
        #expect(!built)
        #expect(lines.all.isEmpty)
    }

    @Test("the token prefix appended as bytes is the token prefix", arguments: [
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "abc", "", "\u{E9}\u{E9}\u{E9}\u{E9}\u{E9}",
    ])
    func tokenPrefixBytes(token: String) {
        var bytes: [UInt8] = []
        appendTokenPrefix(token, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == tokenPrefix(token))
    }

    @Test("the per-second timestamp cache writes what appendTimestamp writes")
    func timestampCache() {
        var cache = TimestampCache()
        let times: [Int64] = [
            1_700_000_000_123_456_789, 1_700_000_000_999_999_999, 1_700_000_000_000_000_000, 1_700_000_001_000_000_000,
            1_700_000_000_500_000_000, 0, 999_999, 951_782_400_999_000_000, 951_782_400_007_000_000,
        ]
        for time in times {
            var cached = Array("x".utf8)
            cache.append(unixNanoseconds: time, to: &cached)
            var direct = Array("x".utf8)
            Logger.appendTimestamp(unixNanoseconds: time, to: &direct)
            #expect(cached == direct, "\(time)")
        }
    }

    @Test("a loop's batched lines have the same shape as single lines")
    func loopLines() throws {
        let lines = Lines()
        let logger = Logger(level: .debug, sink: lines.sink())
        let loop = try EventLoop()
        do {
            let buffer = LoopLogBuffer(logger: logger, loop: loop)
            buffer.log(.info, "first")
            buffer.log(.warning) { $0.append(contentsOf: "second\u{7}".utf8) }
            buffer.flush()
        }
        let all = lines.all.joined().split(separator: "\n")
        try #require(all.count == 2)
        #expect(all[0].hasSuffix(" info first"))
        #expect(all[1].hasSuffix(" warning second "))
        #expect(all.allSatisfy { $0.utf8.count == 24 + $0.split(separator: " ", maxSplits: 1)[1].utf8.count + 1 })
        #expect(all.allSatisfy { $0.dropFirst(23).first == "Z" })
    }
}
