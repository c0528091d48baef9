import EventLoop
import Glibc
import RelayCore

/// The log lines of one event loop, written together at the end of the loop
/// iteration that produced them (a zero-delay timer runs after the
/// iteration's I/O) instead of one write(2) per line: at 10,000 requests a
/// second the per-request line cost ~10 % of the relay's CPU in write(2)
/// alone. (Holding lines longer, up to 50 ms, measured no better: at low
/// rates the writes left per request are TLS writes to APNs.) Each write is
/// whole lines of at most `Logger.maxLineBytes` bytes in all, so writes to a
/// pipe stay atomic and lines from several loops never interleave. Confined
/// to its loop; `flush()` on shutdown.
public final class LoopLogBuffer {
    public let logger: Logger
    private let loop: EventLoop
    private var pending: [UInt8] = []
    private var flushScheduled = false
    private var timestamps = TimestampCache()
    /// The flush the loop runs, made once; it reaches the buffer through
    /// `reference`, for the reason `ConnectionReference` gives (every
    /// delivery's completion retains this buffer).
    private let reference: LogBufferReference
    private let flushCallback: () -> Void

    public init(logger: Logger, loop: EventLoop) {
        self.logger = logger
        self.loop = loop
        let reference = LogBufferReference()
        self.reference = reference
        flushCallback = { reference.buffer?.flush() }
        pending.reserveCapacity(Logger.maxLineBytes + 256)
        reference.buffer = self
    }

    deinit {
        reference.buffer = nil
        flush()
    }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard logger.isEnabled(level) else { return }
        log(level) { $0.append(contentsOf: message().utf8) }
    }

    /// `Logger.log(_:building:)`, batched like `log(_:_:)`: the message is
    /// written straight into the pending lines.
    public func log(_ level: LogLevel, building message: (inout [UInt8]) -> Void) {
        guard logger.isEnabled(level) else { return }
        let start = pending.count
        logger.appendLine(level, to: &pending, timestamps: &timestamps, building: message)
        if pending.count > Logger.maxLineBytes {
            // Out with the lines before this one (one line alone always fits).
            pending.withUnsafeBytes { logger.write(UnsafeRawBufferPointer(rebasing: $0[..<start])) }
            pending.removeSubrange(..<start)
        }
        if !flushScheduled {
            flushScheduled = true
            loop.schedule(after: .zero, flushCallback)
        }
    }

    public func flush() {
        flushScheduled = false
        guard !pending.isEmpty else { return }
        pending.withUnsafeBytes { logger.write($0) }
        pending.removeAll(keepingCapacity: true)
    }
}

/// `ConnectionReference` for a `LoopLogBuffer`: set in init, cleared in
/// deinit, read by the loop's flush.
final class LogBufferReference {
    unowned(unsafe) var buffer: LoopLogBuffer?
}
