/// Accepts connections from a listening socket on a loop, in bounded batches,
/// and backs off instead of spinning when accept fails.
///
/// Level-triggered readiness stays asserted while connections are queued, so
/// an accept that keeps failing (EMFILE/ENFILE: out of descriptors) would wake
/// the loop forever. Like nginx, the acceptor then stops watching the
/// listener for `backoff` and tries again; queued connections wait in the
/// kernel backlog meanwhile. Thread-confined to its loop.
public final class Acceptor: IOHandler {
    public let listener: Socket
    private let loop: EventLoop
    private let maxPerWakeup: Int
    private let backoff: Duration
    private let onAccept: (Socket) -> Void
    private let onError: (SocketError) -> Void
    private var paused = false
    private var backingOff = false
    private var backoffTimer: TimerID?
    /// The accept call; tests replace it to inject failures.
    var acceptConnection: (Socket) throws(SocketError) -> Socket? = { socket throws(SocketError) in try socket.accept() }

    /// Starts accepting on `listener` (already listening, non-blocking).
    /// `onAccept` gets each connection; `onError` hears every accept failure
    /// (resource exhaustion included) before the back-off. Call on the loop
    /// thread.
    public init(listener: Socket, on loop: EventLoop, maxPerWakeup: Int = 64,
                backoff: Duration = .milliseconds(100),
                onAccept: @escaping (Socket) -> Void,
                onError: @escaping (SocketError) -> Void = { _ in }) throws(EventLoopError) {
        self.listener = listener
        self.loop = loop
        self.maxPerWakeup = max(maxPerWakeup, 1)
        self.backoff = backoff
        self.onAccept = onAccept
        self.onError = onError
        try loop.register(listener.fileDescriptor, interest: .readable, handler: self)
    }

    /// True while accepting is suspended by `pause()` or a back-off.
    public var isAccepting: Bool { !paused && !backingOff && listener.isOpen }

    /// Stops accepting (connection cap reached, shutdown begun) until `resume()`.
    public func pause() {
        paused = true
        updateInterest()
    }

    public func resume() {
        paused = false
        updateInterest()
    }

    /// Stops accepting for good and closes the listening socket.
    public func close() {
        if let backoffTimer { loop.cancel(backoffTimer) }
        backoffTimer = nil
        guard listener.isOpen else { return }
        loop.deregister(listener.fileDescriptor)
        listener.close()
    }

    private func updateInterest() {
        guard listener.isOpen else { return }
        loop.setInterest(listener.fileDescriptor, paused || backingOff ? [] : .readable)
    }

    public func handleIO(_ events: IOEvents) {
        // Bounded so one busy listener cannot starve established connections.
        for _ in 0..<maxPerWakeup {
            guard isAccepting else { return }
            let socket: Socket?
            do {
                socket = try acceptConnection(listener)
            } catch {
                onError(error)
                // Every remaining accept error is one that retrying at once
                // would repeat (EMFILE, ENFILE, ENOBUFS, ENOMEM, or worse).
                backingOff = true
                updateInterest()
                backoffTimer = loop.schedule(after: backoff) { [weak self] in
                    guard let self else { return }
                    self.backoffTimer = nil
                    self.backingOff = false
                    self.updateInterest()
                }
                return
            }
            guard let socket else { return }
            onAccept(socket)
        }
    }
}
