import CEventLoop
import Glibc

/// Makes writes to a closed peer return EPIPE instead of killing the process.
/// Socket writes already pass MSG_NOSIGNAL; this also covers everything else
/// (TLS libraries writing to pipes, stdout to a closed pipe).
public func ignoreSIGPIPE() {
    signal(SIGPIPE, SIG_IGN)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (each sender connection is
/// a descriptor; the default soft limit of 1024 is far too low). Returns the
/// soft limit now in force.
@discardableResult
public func raiseFileDescriptorLimit() throws(EventLoopError) -> UInt64 {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
        throw EventLoopError(.resourceLimit, errno: errno)
    }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw EventLoopError(.resourceLimit, errno: errno)
        }
    }
    return UInt64(limit.rlim_cur)
}

/// Waits on the calling thread for one of `signals`, which must already be
/// blocked (see `SignalSource.block(_:)`), for at most `timeout` (nil: for
/// ever). Returns the signal taken, or nil when the time ran out. For a
/// daemon's main thread, which has nothing else to do but wait for SIGTERM.
public func waitForBlockedSignal(_ signals: [Int32], timeout: Duration? = nil) -> Int32? {
    var set = SignalSource.makeSet(signals)
    let deadline = timeout.map { EventLoop.deadline(after: $0, from: EventLoop.monotonicNanoseconds()) }
    while true {
        let received: Int32
        if let deadline {
            let now = EventLoop.monotonicNanoseconds()
            guard now < deadline else { return nil }
            let remaining = deadline - now
            var wait = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
            received = sigtimedwait(&set, nil, &wait)
        } else {
            received = sigwaitinfo(&set, nil)
        }
        if received > 0 { return received }
        // EINTR (another signal's handler ran): wait out the rest.
        if errno == EAGAIN { return nil }
    }
}

/// Delivers signals as callbacks on a loop, through a signalfd.
///
/// signalfd only sees signals that are blocked, in every thread that could
/// otherwise take them: call `SignalSource.block(_:)` on the main thread
/// *before any other thread starts* (threads inherit the mask), else the
/// kernel may run the default action (terminate) in a thread that does not
/// block them. Thread-confined to its loop.
public final class SignalSource: IOHandler {
    private let loop: EventLoop
    private var descriptor: Int32
    private let handler: (Int32) -> Void

    /// Blocks `signals` in the calling thread (and the threads it starts
    /// afterwards).
    public static func block(_ signals: [Int32]) throws(EventLoopError) {
        var set = makeSet(signals)
        let result = pthread_sigmask(SIG_BLOCK, &set, nil)
        guard result == 0 else { throw EventLoopError(.signalMask, errno: result) }
    }

    static func makeSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }

    /// Watches `signals` (already blocked, see `block(_:)`) on `loop`; calls
    /// `handler` with each signal number on the loop thread. Call on the loop
    /// thread.
    public init(signals: [Int32], on loop: EventLoop, handler: @escaping (Int32) -> Void) throws(EventLoopError) {
        var set = SignalSource.makeSet(signals)
        let descriptor = signalfd(-1, &set, shim_SFD_NONBLOCK_CLOEXEC())
        guard descriptor >= 0 else { throw EventLoopError(.signalfdCreate, errno: errno) }
        self.loop = loop
        self.descriptor = descriptor
        self.handler = handler
        do {
            try loop.register(descriptor, interest: .readable, handler: self)
        } catch {
            Glibc.close(descriptor)
            self.descriptor = -1
            throw error
        }
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Stops watching and closes the signalfd (the signals stay blocked).
    public func cancel() {
        guard descriptor >= 0 else { return }
        loop.deregister(descriptor)
        Glibc.close(descriptor)
        descriptor = -1
    }

    public func handleIO(_ events: IOEvents) {
        var info = signalfd_siginfo()
        let size = MemoryLayout<signalfd_siginfo>.size
        // Bounded: each read consumes one pending signal; stop after a batch
        // so a signal storm cannot hold the loop.
        for _ in 0..<64 where descriptor >= 0 {
            let count = withUnsafeMutableBytes(of: &info) { Glibc.read(descriptor, $0.baseAddress, size) }
            guard count == size else { return }
            handler(Int32(bitPattern: info.ssi_signo))
        }
    }
}
