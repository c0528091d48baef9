import EventLoop
import Glibc

// Why the relay's own socket and not hiredis' async API (redisAsyncContext
// with an adapter to the event loop, as hiredis' adapters/*.h do), measured
// on Debian 12's hiredis 0.14.1:
// - redisAsyncConnect resolves a host name with getaddrinfo on the calling
//   thread: its "Name or service not known" comes back from the call
//   itself, so a slow DNS server would stall the loop thread and every
//   connection on it. The relay resolves off the loop (`Resolver`).
// - hiredis frees the async context itself when the connection fails or
//   the server closes it, inside redisAsyncHandleRead, after calling every
//   pending callback: the context has no owner that frees it in deinit
//   (ARCHITECTURE.md §3), and a callback that touches it afterwards is a
//   use after free.
// - 0.14.1's async API has no connect or command timeout (redisOptions and
//   its timeouts came with 1.0), so the timers, the FIFO of completions and
//   the reconnects are the relay's either way; what the context would add is
//   moving bytes, which the loop's `Socket` does (non-blocking,
//   MSG_NOSIGNAL, readiness from epoll).
// - Its reader is hiredis' default one, without the relay's limits
//   (`RedisReplyLimits`: 16 GiB of address space for `*2147483647\r\n`).
// So the connection owns its socket on the loop and uses only hiredis'
// reader and command formatter (`Hiredis.swift`).

/// What a connection tells its owner, for logs and metrics, on the loop
/// thread.
public enum RedisConnectionEvent: Hashable, Sendable {
    case connected
    /// An attempt failed; the next one starts in `retryIn`.
    case connectFailed(RedisError, retryIn: Duration)
    /// A ready connection failed; the next attempt starts in `retryIn`.
    case lost(RedisError, retryIn: Duration)
    case closed
}

/// One connection to Redis on an event loop: connects (TCP or a unix
/// socket), logs in (`AUTH`, `SELECT`), pipelines commands and completes
/// each exactly once with its reply or an error, and reconnects with a
/// backoff after a failure. What to do when is `RedisConnectionMachine`'s;
/// this class performs it.
///
/// Thread confinement: every method is for the loop's thread, and every
/// completion and event runs there, never inside `send` (a completion
/// `send` decides at once, such as `tooManyQueued`, runs on a later pass).
/// While its socket is registered the loop keeps the connection: call
/// `close()` when done.
public final class RedisConnection: IOHandler {
    public typealias Completion = (Result<RedisValue, RedisError>) -> Void

    private typealias Machine = RedisConnectionMachine
    private typealias Event = (inout Machine, inout [Machine.Action]) -> Void

    private let loop: EventLoop
    private let settings: RedisConnectionSettings
    private let handshake: [RedisCommand]
    private let onEvent: (RedisConnectionEvent) -> Void
    private var machine: Machine

    private struct Command {
        /// The bytes until they are written.
        var encoded: [UInt8]?
        let completion: Completion
    }

    private var commands: [RedisCommandID: Command] = [:]

    private var socket: Socket?
    /// Where the socket connects to, for the failure's text.
    private var socketAddress: Machine.Address?
    /// Bumped whenever the socket closes: a pass that finds it changed
    /// stops (its bytes belonged to the old connection).
    private var socketGeneration = 0
    private var interest: IOEvents?
    private var reader: HiredisReader
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var flushScheduled = false
    private let readBuffer: UnsafeMutableRawBufferPointer
    private static let readBufferSize = 64 * 1024
    /// Reads per readiness before other descriptors get their turn.
    private static let readsPerPass = 16

    private var connectTimer: TimerID?
    private var reconnectTimer: TimerID?
    private var commandTimer: TimerID?

    /// Events that arose while an earlier event's actions were performed
    /// (a connect that fails at once), handled after them, in order.
    private var pendingEvents: [Event] = []
    private var handlingEvent = false
    /// Completions and events for the owner, run once the machine's work
    /// for an I/O event, timer or call is done, so no owner's code runs in
    /// the middle of one.
    private enum Delivery {
        case completion(Completion, Result<RedisValue, RedisError>)
        case event(RedisConnectionEvent)
    }

    private var deliveries = FIFO<Delivery>()
    private var delivering = false
    private var deliveryScheduled = false
    private var batchDepth = 0

    /// A connection to `url`; `start()` connects. `random` draws the
    /// backoff's jitter; `onEvent` hears connects, failures and the close.
    public init(url: RedisURL, settings: RedisConnectionSettings = RedisConnectionSettings(), on loop: EventLoop,
                random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
                onEvent: @escaping (RedisConnectionEvent) -> Void = { _ in }) {
        self.loop = loop
        self.settings = settings
        self.onEvent = onEvent
        handshake = Self.handshakeCommands(for: url)
        machine = Machine(endpoint: url.endpoint, handshake: handshake.map(\.name), settings: settings, random: random)
        reader = HiredisReader(limits: settings.replyLimits)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 1)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// `AUTH [user] password` when the URL has a password, then `SELECT db`
    /// for a database other than 0.
    static func handshakeCommands(for url: RedisURL) -> [RedisCommand] {
        var commands: [RedisCommand] = []
        if let password = url.password {
            commands.append(RedisCommand([Array("AUTH".utf8)] + (url.user.map { [Array($0.utf8)] } ?? []) + [password.bytes]))
        }
        if url.database != 0 {
            commands.append(RedisCommand("SELECT", String(url.database)))
        }
        return commands
    }

    public var state: RedisConnectionState { machine.state }

    /// Commands sent and not yet completed.
    public var pendingCount: Int { machine.pendingCount }

    /// Starts connecting; once (a closed connection stays closed).
    public func start() {
        batch { handle { [loop] in $0.start(now: loop.now, into: &$1) } }
    }

    /// Sends `command`; `completion` gets its reply, or why there is none.
    /// A top-level error reply is `.serverError`.
    public func send(_ command: RedisCommand, completion: @escaping Completion) {
        batch(deliverNow: false) {
            handle { [loop] machine, actions in
                let id = machine.send(now: loop.now, into: &actions)
                self.commands[id] = Command(encoded: command.encoded, completion: completion)
            }
        }
    }

    /// Closes the connection: every command not completed fails with
    /// `.closed`. Idempotent.
    public func close() {
        batch { handle { $0.close(into: &$1) } }
    }

    // MARK: The machine's events and actions

    /// Runs `body`, then the deliveries it produced: now, or on a later
    /// pass (`send`).
    private func batch(deliverNow: Bool = true, _ body: () -> Void) {
        batchDepth += 1
        body()
        batchDepth -= 1
        guard batchDepth == 0, !deliveries.isEmpty else { return }
        if deliverNow {
            deliver()
        } else if !deliveryScheduled {
            deliveryScheduled = true
            loop.schedule(after: .zero) { [weak self] in
                guard let self else { return }
                self.deliveryScheduled = false
                self.deliver()
            }
        }
    }

    /// Hands one event to the machine and performs its actions; an event
    /// that arises meanwhile waits for them.
    private func handle(_ event: @escaping Event) {
        pendingEvents.append(event)
        guard !handlingEvent else { return }
        handlingEvent = true
        var index = 0
        while index < pendingEvents.count {
            var actions: [Machine.Action] = []
            pendingEvents[index](&machine, &actions)
            index += 1
            perform(actions)
        }
        pendingEvents.removeAll(keepingCapacity: true)
        handlingEvent = false
    }

    private func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .resolve(let host, let port, let attempt):
                Resolver.resolve(host: host, port: port, on: loop) { [weak self] result in
                    guard let self else { return }
                    self.batch {
                        self.handle { [loop = self.loop] machine, actions in
                            switch result {
                            case .success(let addresses): machine.resolved(addresses, attempt: attempt, now: loop.now, into: &actions)
                            case .failure(let error): machine.resolveFailed(error.description, attempt: attempt, now: loop.now, into: &actions)
                            }
                        }
                    }
                }
            case .connect(let address):
                connect(to: address)
            case .writeHandshake:
                for command in handshake { output += command.encoded }
                scheduleFlush()
            case .write(let ids):
                for id in ids {
                    // The machine writes each command once, after `send` stored it.
                    guard let encoded = commands[id]?.encoded else { preconditionFailure("RedisConnection: \(id) written twice") }
                    output += encoded
                    commands[id]?.encoded = nil
                }
                scheduleFlush()
            case .closeTransport:
                closeSocket()
            case .armConnectTimer(let deadline):
                if let connectTimer { loop.cancel(connectTimer) }
                connectTimer = schedule(at: deadline) { connection in
                    connection.connectTimer = nil
                    connection.handle { [loop = connection.loop] in $0.connectTimerFired(now: loop.now, into: &$1) }
                }
            case .cancelConnectTimer:
                if let connectTimer { loop.cancel(connectTimer) }
                connectTimer = nil
            case .armReconnectTimer(let deadline):
                if let reconnectTimer { loop.cancel(reconnectTimer) }
                reconnectTimer = schedule(at: deadline) { connection in
                    connection.reconnectTimer = nil
                    connection.handle { [loop = connection.loop] in $0.reconnectTimerFired(now: loop.now, into: &$1) }
                }
            case .cancelReconnectTimer:
                if let reconnectTimer { loop.cancel(reconnectTimer) }
                reconnectTimer = nil
            case .setCommandTimer(let deadline):
                if let commandTimer { loop.cancel(commandTimer) }
                commandTimer = deadline.map { deadline in
                    schedule(at: deadline) { connection in
                        connection.commandTimer = nil
                        connection.handle { [loop = connection.loop] in $0.commandTimerFired(now: loop.now, into: &$1) }
                    }
                }
            case .succeed(let id, let value):
                complete(id, .success(value))
            case .fail(let id, let error):
                complete(id, .failure(error))
            case .report(let report):
                deliveries.append(.event(event(for: report)))
            }
        }
    }

    private func complete(_ id: RedisCommandID, _ result: Result<RedisValue, RedisError>) {
        guard let command = commands.removeValue(forKey: id) else {
            preconditionFailure("RedisConnection: completion for \(id), which is not pending")
        }
        deliveries.append(.completion(command.completion, result))
    }

    private func event(for report: Machine.Report) -> RedisConnectionEvent {
        switch report {
        case .connected: .connected
        case .attemptFailed(let error, let delay): .connectFailed(error, retryIn: .nanoseconds(Int64(clamping: delay)))
        case .lost(let error, let delay): .lost(error, retryIn: .nanoseconds(Int64(clamping: delay)))
        case .closed: .closed
        }
    }

    /// Runs what waits for the owner, in order; a completion that sends or
    /// closes adds to the queue, which this same pass then runs.
    private func deliver() {
        guard !delivering else { return }
        delivering = true
        while let delivery = deliveries.popFirst() {
            switch delivery {
            case .completion(let completion, let result): completion(result)
            case .event(let event): onEvent(event)
            }
        }
        delivering = false
    }

    private func schedule(at deadline: UInt64, _ body: @escaping (RedisConnection) -> Void) -> TimerID {
        loop.schedule(atNanoseconds: deadline) { [weak self] in
            guard let self else { return }
            self.batch { body(self) }
        }
    }

    // MARK: The socket

    private func connect(to address: Machine.Address) {
        closeSocket()
        do {
            let opened: (socket: Socket, progress: ConnectProgress)
            switch address {
            case .tcp(let address):
                opened = try Socket.connect(to: address)
                // A peer that vanished without a FIN is noticed while the
                // connection is idle too (as hiredis' redisEnableKeepAlive).
                try? opened.socket.setKeepAlive(true, idleSeconds: 15, intervalSeconds: 5, probeCount: 3)
            case .unix(let path):
                opened = try Socket.connect(unixPath: path)
            }
            socket = opened.socket
            socketAddress = address
            let wanted: IOEvents = opened.progress == .connected ? .readable : .writable
            try loop.register(opened.socket.fileDescriptor, interest: wanted, handler: self)
            interest = wanted
            if opened.progress == .connected { handle { $0.connected(into: &$1) } }
        } catch {
            let reason = "\(address.text): \(error)"
            handle { [loop] in $0.connectFailed(reason, now: loop.now, into: &$1) }
        }
    }

    public func handleIO(_ events: IOEvents) {
        batch {
            switch machine.machineState {
            case .connecting:
                guard let socket else { return }
                if let error = socket.pendingConnectError() {
                    let reason = (socketAddress.map { "\($0.text): " } ?? "") + "\(error)"
                    handle { [loop] in $0.connectFailed(reason, now: loop.now, into: &$1) }
                } else if !events.isDisjoint(with: [.writable, .hangup, .error]) {
                    setInterest(.readable)
                    handle { $0.connected(into: &$1) }
                }
            case .handshaking, .ready:
                if !events.isDisjoint(with: [.readable, .hangup, .error]) { readAvailable() }
                if events.contains(.writable) { flush() }
            case .idle, .resolving, .waitingToReconnect, .closed:
                return
            }
        }
    }

    /// Reads and hands each complete reply to the machine, until the socket
    /// is drained (bounded for fairness: level-triggered readiness brings
    /// the rest) or the connection ends.
    private func readAvailable() {
        let generation = socketGeneration
        for _ in 0..<Self.readsPerPass {
            guard let socket, generation == socketGeneration else { return }
            switch socket.read(into: readBuffer) {
            case .bytes(let count):
                do throws(RedisError) {
                    try reader.feed(UnsafeRawBufferPointer(rebasing: readBuffer[..<count]))
                    while generation == socketGeneration, let reply = try reader.nextReply() {
                        handle { [loop] in $0.replyReceived(reply, now: loop.now, into: &$1) }
                    }
                } catch {
                    guard generation == socketGeneration else { return }
                    let reason = error.reason
                    handle { [loop] in $0.protocolError(reason, now: loop.now, into: &$1) }
                    return
                }
                if count < readBuffer.count { return }
            case .wouldBlock:
                return
            case .endOfFile:
                handle { [loop] in $0.transportLost("server closed the connection", now: loop.now, into: &$1) }
                return
            case .failed(let code):
                let reason = "read failed: \(String(cString: strerror(code))) (\(code))"
                handle { [loop] in $0.transportLost(reason, now: loop.now, into: &$1) }
                return
            }
        }
    }

    /// Writes on a later pass, so the commands of one pass go out together.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.batch { self.flush() }
        }
    }

    /// Writes what waits until the socket is full or nothing is left.
    private func flush() {
        guard let socket, outputOffset < output.count else { return }
        while outputOffset < output.count {
            let result = output.withUnsafeBytes { socket.write(UnsafeRawBufferPointer(rebasing: $0[outputOffset...])) }
            switch result {
            case .bytes(let count):
                outputOffset += count
            case .wouldBlock:
                setInterest([.readable, .writable])
                return
            case .failed(let code):
                // A server that closes says why first (an error reply, such
                // as maxclients'), and it may be unread yet: read it, so the
                // failure names it; else the write's error is the reason.
                let generation = socketGeneration
                readAvailable()
                guard generation == socketGeneration else { return }
                let reason = "write failed: \(String(cString: strerror(code))) (\(code))"
                handle { [loop] in $0.transportLost(reason, now: loop.now, into: &$1) }
                return
            }
        }
        // A burst's buffer is kept only while it is small.
        output.removeAll(keepingCapacity: output.capacity <= 1 << 20)
        outputOffset = 0
        setInterest(.readable)
    }

    private func setInterest(_ wanted: IOEvents) {
        guard let socket, let interest, interest != wanted else { return }
        self.interest = wanted
        loop.setInterest(socket.fileDescriptor, wanted)
    }

    /// Closes the socket and forgets what it read and had to write.
    private func closeSocket() {
        guard let socket else { return }
        if interest != nil { loop.deregister(socket.fileDescriptor) }
        interest = nil
        socket.close()
        self.socket = nil
        socketGeneration += 1
        output.removeAll()
        outputOffset = 0
        reader = HiredisReader(limits: settings.replyLimits)
    }
}

extension RedisConnectionMachine.Address {
    fileprivate var text: String {
        switch self {
        case .tcp(let address): address.description
        case .unix(let path): path
        }
    }
}
