import Dispatch
import EventLoop
import Glibc
import HTTPCore
import Synchronization
import TLS

/// Why a listener could not start listening.
public struct HTTP1ListenerError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The HTTP/1.1 listener on every loop of a group: accepts connections
/// (HTTPS when given a TLS context), hands their requests to a `Handler`
/// per loop, and shuts down gracefully.
///
/// Thread safety: the per-loop parts are touched only on their own loop (via
/// `execute`); the shared counters are atomic.
public final class HTTP1Listener<Handler: HTTP1RequestHandler>: DrainableListener, @unchecked Sendable {
    public let counters: HTTP1ListenerCounters
    private let options: ListenerOptions
    private let loops: [EventLoop]
    private let tlsContext: TLSContext?
    /// Where the listener's own troubles go (a failed accept, a TLS setup).
    /// A closure, not Observability's `Logger`: HTTP1 is below Observability,
    /// which serves its metrics through this listener.
    private let warn: @Sendable (String) -> Void
    /// Makes each loop's request handler, on that loop.
    private let makeHandler: @Sendable (EventLoop) -> Handler
    /// The other protocol its connections may speak (HTTP/2 on the API port).
    private let protocolSwitch: (any ProtocolSwitch)?
    private var loopListeners: [LoopListener<Handler>] = []
    private let nextLoop = Atomic<Int>(0)

    /// A listener whose requests go to the handler `makeHandler` makes for
    /// each loop (on that loop). `counters`: nil counts against
    /// `options.maxConnections` in counters of its own. `warn` takes the
    /// listener's own warnings (a failed accept, a failed TLS setup).
    /// `protocolSwitch`: the protocol a connection switches to when TLS
    /// negotiates its ALPN id or, without ALPN, when it opens with its preface.
    public init(options: ListenerOptions, loops: [EventLoop], tlsContext: TLSContext?,
                counters: HTTP1ListenerCounters? = nil, protocolSwitch: (any ProtocolSwitch)? = nil,
                warn: @escaping @Sendable (String) -> Void,
                makeHandler: @escaping @Sendable (EventLoop) -> Handler) {
        precondition(!loops.isEmpty, "HTTP1Listener needs at least one event loop")
        self.options = options
        self.loops = loops
        self.tlsContext = tlsContext
        self.warn = warn
        self.makeHandler = makeHandler
        self.protocolSwitch = protocolSwitch
        self.counters = counters ?? HTTP1ListenerCounters(maxConnections: options.maxConnections)
    }

    /// Creates the handler on each loop, binds and starts accepting.
    /// Returns the port bound. Call once (this or `start(acceptingOn:)`),
    /// from a thread that is not one of the loops.
    public func start() throws(HTTP1ListenerError) -> UInt16 {
        makeLoopListeners()
        let hosts = options.bindAddress.map { [$0] } ?? ["::", "0.0.0.0"]
        var lastError: SocketError?
        for host in hosts {
            do {
                return try listen(host: host)
            } catch {
                lastError = error
                // Only a missing IPv6 stack falls back to IPv4.
                guard options.bindAddress == nil,
                      error.errno == EAFNOSUPPORT || error.errno == EADDRNOTAVAIL || error.operation == .socket
                else { break }
            }
        }
        let shown = options.bindAddress ?? "all interfaces"
        throw HTTP1ListenerError("cannot listen on \(shown) port \(options.port): \(lastError.map { String(describing: $0) } ?? "unknown error")")
    }

    /// Creates the handler on each loop and accepts on `socket`, a listening
    /// socket made by another process (systemd's socket activation), instead
    /// of binding `options`' address. Every loop accepts on a descriptor of
    /// its own for the one socket (the kernel wakes each loop that waits;
    /// one takes the connection, the others find none), and shutdown closes
    /// those descriptors without shutting the socket down: connections that
    /// arrive meanwhile wait in its backlog for the next process. Returns
    /// the socket's port. Call once, from a thread that is not one of the loops.
    public func start(acceptingOn socket: Socket) throws(HTTP1ListenerError) -> UInt16 {
        makeLoopListeners()
        let port = socket.localPort
        var descriptors: [Int32] = []
        for _ in loopListeners.dropLast() {
            do { descriptors.append(try socket.duplicate().releaseDescriptor()) } catch {
                for descriptor in descriptors { Glibc.close(descriptor) }
                throw HTTP1ListenerError("cannot share the listening socket on port \(port) between loops: \(error)")
            }
        }
        descriptors.append(socket.releaseDescriptor())
        for (index, server) in loopListeners.enumerated() {
            let descriptor = descriptors[index]
            let started: Result<Void, SocketError> = server.loop.runAndWait {
                Result { () throws(SocketError) in try server.accept(on: Socket(adopting: descriptor), distributing: false) }
            }
            if case .failure(let started) = started {
                for earlier in loopListeners[..<index] { earlier.loop.runAndWait { earlier.stopAccepting() } }
                for later in descriptors[(index + 1)...] { Glibc.close(later) }
                throw HTTP1ListenerError("cannot accept on the listening socket on port \(port): \(started)")
            }
        }
        return port
    }

    private func makeLoopListeners() {
        precondition(loopListeners.isEmpty, "HTTP1Listener started twice")
        for loop in loops {
            let server = loop.runAndWait {
                LoopListener(loop: loop, handler: self.makeHandler(loop), server: self)
            }
            loopListeners.append(server)
        }
    }

    private func listen(host: String) throws(SocketError) -> UInt16 {
        var port = options.port
        let listeners = options.reusePort ? loopListeners : [loopListeners[0]]
        for (index, server) in listeners.enumerated() {
            let reusePort = options.reusePort
            let bound: Result<UInt16, SocketError> = server.loop.runAndWait {
                Result { () throws(SocketError) -> UInt16 in
                    try server.listen(host: host, port: port, reusePort: reusePort)
                }
            }
            switch bound {
            case .success(let boundPort):
                port = boundPort
            case .failure(let error):
                for started in listeners[..<index] { started.loop.runAndWait { started.stopAccepting() } }
                throw error
            }
        }
        return port
    }

    /// Hands an accepted connection to the next loop (without SO_REUSEPORT).
    fileprivate func distribute(_ socket: Socket, from origin: LoopListener<Handler>) {
        let index = Int(UInt(bitPattern: nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue) % UInt(loopListeners.count))
        let target = loopListeners[index]
        if target === origin {
            origin.adopt(socket)
            return
        }
        // The descriptor changes owner across threads: duplicate it for the
        // target loop and let the original Socket close its copy here.
        let duplicate = dup(socket.fileDescriptor)
        socket.close()
        guard duplicate >= 0 else { return }
        target.loop.execute { target.adopt(Socket(adopting: duplicate)) }
    }

    fileprivate var configuration: (ListenerOptions, TLSContext?, (any ProtocolSwitch)?, @Sendable (String) -> Void) {
        (options, tlsContext, protocolSwitch, warn)
    }

    /// Stops accepting on every loop; idle connections close, the others
    /// finish their current request and close. Any thread.
    public func beginShutdown() {
        for server in loopListeners {
            server.loop.execute { server.beginShutdown() }
        }
    }

    /// Closes every connection at once (the grace period is over). Any thread.
    public func closeAllConnections() {
        for server in loopListeners {
            server.loop.execute { server.closeAll() }
        }
    }

    /// New connections handshake with `context` from now on (a renewed
    /// certificate); those already open keep the one they began with.
    /// Returns once every loop has it. Only for a listener started with a
    /// TLS context: HTTPS stays HTTPS. Call from a thread that is not one
    /// of the loops.
    public func replaceTLSContext(_ context: TLSContext) {
        precondition(tlsContext != nil, "HTTP1Listener: a TLS context for a listener without TLS")
        for server in loopListeners {
            server.loop.runAndWait { server.tlsContext = context }
        }
    }

    /// Writes the log lines every loop still buffers; returns once done.
    /// Call from a thread that is not one of the loops, before they stop.
    public func flushLogs() {
        for server in loopListeners {
            server.loop.runAndWait { server.handler.flushLog() }
        }
    }

    /// True once no connection is open.
    public var isDrained: Bool { counters.openConnections == 0 }
}

/// The listener and connections of one loop. Confined to that loop.
final class LoopListener<Handler: HTTP1RequestHandler>: ConnectionOwner, SwitchedConnectionOwner, @unchecked Sendable {
    let loop: EventLoop
    let handler: Handler
    private unowned let server: HTTP1Listener<Handler>
    private var acceptor: Acceptor?
    private var connections: [ObjectIdentifier: HTTP1ServerConnection] = [:]
    /// Connections that switched to `protocolSwitch`'s protocol (still counted).
    private var switchedConnections: [ObjectIdentifier: any SwitchedConnection] = [:]
    private let protocolSwitch: (any ProtocolSwitch)?
    private var shuttingDown = false
    private let options: ListenerOptions
    /// Replaced by `HTTP1Listener.replaceTLSContext`, on this loop.
    var tlsContext: TLSContext?
    private let warn: @Sendable (String) -> Void
    private let counters: HTTP1ListenerCounters
    private let inputLimit: Int

    init(loop: EventLoop, handler: Handler, server: HTTP1Listener<Handler>) {
        self.loop = loop
        self.handler = handler
        self.server = server
        (options, tlsContext, protocolSwitch, warn) = server.configuration
        counters = server.counters
        // A whole request (head, body, chunked framing) plus some of the
        // next pipelined one; the parser refuses anything larger first.
        inputLimit = 2 * options.limits.maxHeaderBytes + options.limits.maxBodyBytes + 4096
    }

    func listen(host: String, port: UInt16, reusePort: Bool) throws(SocketError) -> UInt16 {
        let socket = try Socket.listen(host: host, port: port, reusePort: reusePort, backlog: 4096)
        let boundPort = socket.localPort
        try accept(on: socket, distributing: !reusePort)
        return boundPort
    }

    /// Accepts on `socket` (listening) from now on; `distributing`: hands
    /// each connection to the loops in turn, else keeps it on this loop.
    func accept(on socket: Socket, distributing: Bool) throws(SocketError) {
        do {
            acceptor = try Acceptor(listener: socket, on: loop, maxPerWakeup: 64, onAccept: { [weak self] accepted in
                guard let self else { return }
                if distributing { self.server.distribute(accepted, from: self) } else { self.adopt(accepted) }
            }, onError: { [weak self] error in
                self?.warn("accept failed: \(error)")
            })
        } catch {
            throw SocketError(.listen, errno: error.errno)
        }
    }

    func adopt(_ socket: Socket) {
        // Beyond MAX_CONNECTIONS (or while shutting down): accept and close
        // at once, so the backlog does not fill with connections that wait.
        guard !shuttingDown, counters.openConnection() else {
            socket.close()
            return
        }
        var tls: TLSConnection?
        if let tlsContext {
            do {
                tls = try TLSConnection(context: tlsContext, fd: socket.fileDescriptor, serverName: nil)
            } catch {
                warn("TLS setup for a connection failed: \(error)")
                counters.closeConnection()
                socket.close()
                return
            }
        }
        let connection = HTTP1ServerConnection(
            socket: socket, loop: loop, tls: tls,
            machine: HTTP1ConnectionMachine(limits: options.limits, timeouts: options.timeouts,
                                            refusals: handler.refusals),
            inputLimit: inputLimit, handler: handler, counters: counters, owner: self, protocolSwitch: protocolSwitch)
        connections[ObjectIdentifier(connection)] = connection
        if !connection.start() {
            // start() closed it, which already called connectionClosed.
            return
        }
    }

    func connectionClosed(_ connection: HTTP1ServerConnection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            counters.closeConnection()
        }
    }

    func connectionSwitchesProtocol(_ connection: HTTP1ServerConnection, socket: Socket, tls: TLSConnection?,
                                    bufferedInput: [UInt8]) {
        // Stays counted: the switched connection reports its own close.
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil, let protocolSwitch else { return }
        let handoff = ConnectionHandoff(socket: socket, tls: tls, loop: loop, bufferedInput: bufferedInput,
                                        handler: handler, options: options, counters: counters, owner: self)
        let switched = protocolSwitch.makeConnection(handoff)
        switchedConnections[ObjectIdentifier(switched)] = switched
        switched.start()
        if shuttingDown { switched.shutdown() }
    }

    func switchedConnectionClosed(_ connection: any SwitchedConnection) {
        if switchedConnections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            counters.closeConnection()
        }
    }

    func stopAccepting() {
        acceptor?.close()
        acceptor = nil
    }

    func beginShutdown() {
        shuttingDown = true
        stopAccepting()
        for connection in Array(connections.values) { connection.shutdown() }
        for connection in Array(switchedConnections.values) { connection.shutdown() }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
        for connection in Array(switchedConnections.values) { connection.close() }
    }
}
