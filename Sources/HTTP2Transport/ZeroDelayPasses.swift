import EventLoop

/// Work a connection defers to a zero-delay timer, which runs after the
/// current loop iteration's I/O; at most one of each kind waits at a time.
public struct ZeroDelayPasses: OptionSet, Sendable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Write what this iteration submitted or answered: everything queued in
    /// one event batch goes out in one write (one TLS record, one write(2)).
    public static let flush = ZeroDelayPasses(rawValue: 1)
    /// A read pass stopped at its bound (`HTTP2TLSReadStop.yielded`) with
    /// records inside OpenSSL, which epoll does not announce: read them.
    public static let readContinuation = ZeroDelayPasses(rawValue: 2)
}

/// A connection that schedules `ZeroDelayPasses`.
public protocol ZeroDelayPassHost: AnyObject {
    /// Passes scheduled and not yet run.
    var scheduledPasses: ZeroDelayPasses { get set }
    /// The timer of `pass` fired (`pass` is no longer in `scheduledPasses`).
    func runZeroDelayPass(_ pass: ZeroDelayPasses)
}

extension ZeroDelayPassHost {
    /// Schedules `pass` unless it is already waiting (each kind has its own
    /// timer: one closure per scheduled pass, none per request).
    @inlinable
    public func scheduleZeroDelayPass(_ pass: ZeroDelayPasses, on loop: EventLoop) {
        guard !scheduledPasses.contains(pass) else { return }
        scheduledPasses.insert(pass)
        loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.scheduledPasses.remove(pass)
            self.runZeroDelayPass(pass)
        }
    }
}
