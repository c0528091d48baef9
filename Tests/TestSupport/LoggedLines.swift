import Locking

/// The lines a logger wrote, for checks: `sink` is what
/// `Logger(level:sink:)` takes (whole lines as bytes,
/// `<timestamp> <level> <message>\n`, several at once from a loop's
/// buffer), and each line comes back as its level and message. Bytes, not
/// the `Logger` type: TestSupport stays below Observability (a fuzzer
/// builds on it).
public final class LoggedLines: Sendable {
    public struct Line: Sendable, Equatable {
        public let level: String
        public let message: String

        public init(level: String, message: String) {
            (self.level, self.message) = (level, message)
        }
    }

    private let lines = Locked<[Line]>([])

    public init() {}

    public var all: [Line] { lines.withLock { $0 } }
    public var messages: [String] { all.map(\.message) }

    public var sink: @Sendable (UnsafeRawBufferPointer) -> Void {
        { bytes in
            let parsed = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { line in
                let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
                return Line(level: fields.count > 1 ? String(fields[1]) : "",
                            message: fields.count > 2 ? String(fields[2]) : "")
            }
            self.lines.withLock { $0.append(contentsOf: parsed) }
        }
    }
}
