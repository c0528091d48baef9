import EventLoop

/// Where a Redis connection is in its life, as its owner sees it.
public enum RedisConnectionState: String, Sendable {
    /// Not started.
    case idle
    /// Resolving, connecting, or logging in (`AUTH`, `SELECT`).
    case connecting
    case ready
    /// Waiting out the backoff after a failed attempt or a lost connection.
    case waitingToReconnect
    case closed
}

/// A command's identity between the machine and its connection, in the
/// order `send` gave them.
struct RedisCommandID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let rawValue: UInt64
    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    var description: String { "#\(rawValue)" }
}

/// The lifecycle of one Redis connection and its commands, as a value:
/// events in, actions out. `RedisConnection` performs the actions (the
/// socket, the resolver, timers, completions); this type does no I/O, owns
/// no timer and reads no clock, so every rule is tested with exact times.
/// Time comes with the events, as loop nanoseconds (`EventLoop.now`); the
/// backoff's jitter from `random`, injected.
///
/// idle → connecting (resolving, then each address in turn, then `AUTH` and
/// `SELECT`) → ready; a failed attempt or a lost connection → waiting to
/// reconnect (backoff) → connecting…; any state → closed (the owner's close).
///
/// Commands:
/// - `send` queues a command (at most `maxPendingCommands`, else it fails at
///   once); a ready connection writes it at once, otherwise it waits for
///   the next connection to become ready, which writes every waiting one in
///   order (`AUTH` and `SELECT` first: nothing else goes before the
///   server accepted them).
/// - Replies come in the order commands were written (RESP has no other
///   way to match them), so the pending commands are one queue: written
///   ones exactly when the connection is ready.
/// - Each command has the same timeout, measured from `send`, so deadlines
///   come in order and one timer, set for the front, serves all. A written
///   command past its deadline cannot be skipped (its reply may still
///   come): it fails with `timedOut` and the connection is dropped. A
///   queued one past its deadline fails with `timedOut`, naming the last
///   connection failure.
/// - When a ready connection fails, every written command fails with the
///   cause (`connectionLost`, `protocolError`): it may or may not have run,
///   so it is not sent again. Queued commands wait for the next connection.
/// - A top-level error reply fails its command with `serverError`.
///
/// An event that cannot happen in a state (the connection's structure rules
/// it out) stops the process naming both; a late event that can happen (a
/// resolver's answer for an attempt that already ended) is a named,
/// commented no-op.
struct RedisConnectionMachine {
    /// A place to connect to.
    enum Address: Hashable, Sendable {
        case tcp(SocketAddress)
        case unix(path: String)
    }

    /// What the owner hears: logs and metrics.
    enum Report: Hashable, Sendable {
        case connected
        /// An attempt failed; the next starts in `retryIn` nanoseconds.
        case attemptFailed(RedisError, retryIn: UInt64)
        /// A ready connection failed; the next attempt starts in `retryIn`.
        case lost(RedisError, retryIn: UInt64)
        case closed
    }

    enum Action: Hashable, Sendable {
        /// Resolve the host; answer `resolved` or `resolveFailed` with `attempt`.
        case resolve(host: String, port: UInt16, attempt: Int)
        /// Open a socket to the address; answer `connected` or `connectFailed`.
        case connect(Address)
        /// Write the login commands (`AUTH`, `SELECT`), as the URL asks.
        case writeHandshake
        /// Write these commands, in order, after whatever was written before.
        case write([RedisCommandID])
        /// Close the socket and drop what was read and not yet written.
        case closeTransport
        case armConnectTimer(at: UInt64)
        case cancelConnectTimer
        case armReconnectTimer(at: UInt64)
        case cancelReconnectTimer
        /// The command timer: armed for this deadline (replacing any), or none.
        case setCommandTimer(at: UInt64?)
        case succeed(RedisCommandID, RedisValue)
        case fail(RedisCommandID, RedisError)
        case report(Report)
    }

    enum State: Hashable {
        case idle
        case resolving
        /// Trying `addresses` in the resolver's order; `next` is the one to
        /// try after the current; `lastError` why the previous one failed.
        case connecting(addresses: [Address], next: Int, lastError: String)
        /// Connected; waiting for the answer to the handshake command `step`.
        case handshaking(step: Int)
        case ready
        case waitingToReconnect(until: UInt64)
        case closed
    }

    /// A command sent and not yet completed.
    private struct Pending {
        let id: RedisCommandID
        let deadline: UInt64
    }

    let endpoint: RedisURL.Endpoint
    /// The login commands' names, in the order `writeHandshake` writes them.
    let handshake: [String]
    let settings: RedisConnectionSettings
    private var random: any RandomNumberGenerator

    private(set) var machineState: State = .idle
    /// Counts attempts, so that a resolver's late answer is recognised.
    private(set) var attempt = 0
    private var consecutiveFailures = 0
    /// The last attempt's or connection's failure, quoted by the timeouts
    /// of commands that waited for a connection in vain.
    private var lastFailure: String?
    private var nextID: UInt64 = 0
    /// Pending commands in `send` order.
    private var pending = FIFO<Pending>()
    private var commandTimerDeadline: UInt64?

    init(endpoint: RedisURL.Endpoint, handshake: [String], settings: RedisConnectionSettings,
         random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.endpoint = endpoint
        self.handshake = handshake
        self.settings = settings
        self.random = random
    }

    var state: RedisConnectionState {
        switch machineState {
        case .idle: .idle
        case .resolving, .connecting, .handshaking: .connecting
        case .ready: .ready
        case .waitingToReconnect: .waitingToReconnect
        case .closed: .closed
        }
    }

    /// Commands sent and not yet completed (written or waiting).
    var pendingCount: Int { pending.count }

    // MARK: The owner's events

    mutating func start(now: UInt64, into actions: inout [Action]) {
        switch machineState {
        case .idle:
            beginAttempt(now: now, into: &actions)
        case .closed:
            // Closed before it was started: stays closed.
            return
        case .resolving, .connecting, .handshaking, .ready, .waitingToReconnect:
            impossible("start")
        }
    }

    /// A command to send: its id; its completion comes as an action, at
    /// once (refused) or later.
    mutating func send(now: UInt64, into actions: inout [Action]) -> RedisCommandID {
        let id = RedisCommandID(rawValue: nextID)
        nextID += 1
        if machineState == .closed {
            actions.append(.fail(id, .closed))
            return id
        }
        guard pendingCount < settings.maxPendingCommands else {
            actions.append(.fail(id, .tooManyQueued(limit: settings.maxPendingCommands)))
            return id
        }
        pending.append(Pending(id: id, deadline: EventLoop.deadline(after: settings.commandTimeout, from: now)))
        if machineState == .ready { actions.append(.write([id])) }
        updateCommandTimer(into: &actions)
        return id
    }

    /// The owner is done: every pending command fails with `closed`.
    mutating func close(into actions: inout [Action]) {
        switch machineState {
        case .closed:
            // Closed already (a second close, or close from a completion).
            return
        case .connecting, .handshaking:
            actions.append(.closeTransport)
            actions.append(.cancelConnectTimer)
        case .ready:
            actions.append(.closeTransport)
        case .resolving:
            actions.append(.cancelConnectTimer)
        case .waitingToReconnect:
            actions.append(.cancelReconnectTimer)
        case .idle:
            break
        }
        machineState = .closed
        failAllPending(.closed, into: &actions)
        actions.append(.report(.closed))
    }

    // MARK: Connecting

    mutating func resolved(_ addresses: [SocketAddress], attempt resolvedAttempt: Int, now: UInt64, into actions: inout [Action]) {
        guard resolvedAttempt == attempt, machineState == .resolving else {
            // Late: the attempt ended (connect timeout, close) while the
            // resolver was working; a newer attempt resolves for itself.
            return
        }
        guard let first = addresses.first else {
            return attemptFailed(.connectFailed("host resolved to no address"), now: now, into: &actions)
        }
        let all = addresses.map(Address.tcp)
        machineState = .connecting(addresses: all, next: 1, lastError: "")
        actions.append(.connect(.tcp(first)))
    }

    mutating func resolveFailed(_ reason: String, attempt resolvedAttempt: Int, now: UInt64, into actions: inout [Action]) {
        guard resolvedAttempt == attempt, machineState == .resolving else {
            // Late, as for `resolved`.
            return
        }
        attemptFailed(.connectFailed("cannot resolve host: \(reason)"), now: now, into: &actions)
    }

    /// The socket to the current address failed: try the next one, else
    /// the attempt failed with the last error.
    mutating func connectFailed(_ reason: String, now: UInt64, into actions: inout [Action]) {
        guard case .connecting(let addresses, let next, _) = machineState else { impossible("connectFailed") }
        if next < addresses.count {
            machineState = .connecting(addresses: addresses, next: next + 1, lastError: reason)
            actions.append(.closeTransport)
            actions.append(.connect(addresses[next]))
        } else {
            attemptFailed(.connectFailed(reason), now: now, into: &actions)
        }
    }

    mutating func connected(into actions: inout [Action]) {
        guard case .connecting = machineState else { impossible("connected") }
        if handshake.isEmpty {
            becomeReady(into: &actions)
        } else {
            machineState = .handshaking(step: 0)
            actions.append(.writeHandshake)
        }
    }

    mutating func connectTimerFired(now: UInt64, into actions: inout [Action]) {
        let timeout = "\(settings.connectTimeout)"
        switch machineState {
        case .resolving:
            attemptFailed(.connectFailed("resolving the host timed out after \(timeout)"), now: now, into: &actions)
        case .connecting(_, _, let lastError):
            attemptFailed(.connectFailed("connect timed out after \(timeout)" + (lastError.isEmpty ? "" : " (\(lastError))")),
                          now: now, into: &actions)
        case .handshaking(let step):
            attemptFailed(.connectFailed("no answer to \(handshake[step]) within \(timeout)"), now: now, into: &actions)
        case .idle, .ready, .waitingToReconnect, .closed:
            // The timer is armed by an attempt and cancelled when it ends.
            impossible("connectTimerFired")
        }
    }

    mutating func reconnectTimerFired(now: UInt64, into actions: inout [Action]) {
        guard case .waitingToReconnect = machineState else { impossible("reconnectTimerFired") }
        beginAttempt(now: now, into: &actions)
    }

    // MARK: Replies and failures

    mutating func replyReceived(_ value: RedisValue, now: UInt64, into actions: inout [Action]) {
        switch machineState {
        case .handshaking(let step):
            if case .error(let text) = value {
                return attemptFailed(.connectFailed("\(handshake[step]) refused: \(oneLine(text, limit: RedisError.maxServerErrorBytes))"),
                                     now: now, into: &actions)
            }
            guard value.isOK else {
                return attemptFailed(.connectFailed("\(handshake[step]) answered \(oneLine(value.description, limit: 80)), not +OK"),
                                     now: now, into: &actions)
            }
            if step + 1 < handshake.count {
                machineState = .handshaking(step: step + 1)
            } else {
                becomeReady(into: &actions)
            }
        case .ready:
            guard let command = pending.popFirst() else {
                return connectionFailed(.protocolError("a reply with no command waiting for one"), now: now, into: &actions)
            }
            if case .error(let text) = value {
                actions.append(.fail(command.id, .serverError(replyText: text)))
            } else {
                actions.append(.succeed(command.id, value))
            }
            updateCommandTimer(into: &actions)
        case .idle, .resolving, .connecting, .waitingToReconnect, .closed:
            // The connection reads only while logging in or ready, and
            // stops reading the moment the transport closes.
            impossible("replyReceived")
        }
    }

    /// The server's bytes are not RESP, or a reply is past the limits.
    mutating func protocolError(_ reason: String, now: UInt64, into actions: inout [Action]) {
        switch machineState {
        case .handshaking(let step):
            attemptFailed(.connectFailed("protocol error in the answer to \(handshake[step]): \(reason)"), now: now, into: &actions)
        case .ready:
            connectionFailed(.protocolError(reason), now: now, into: &actions)
        case .idle, .resolving, .connecting, .waitingToReconnect, .closed:
            impossible("protocolError")
        }
    }

    /// The transport ended: end of file, a reset, a failed read or write.
    mutating func transportLost(_ reason: String, now: UInt64, into actions: inout [Action]) {
        switch machineState {
        case .handshaking(let step):
            attemptFailed(.connectFailed("\(reason) (logging in, \(handshake[step]))"), now: now, into: &actions)
        case .ready:
            connectionFailed(.connectionLost(reason), now: now, into: &actions)
        case .idle, .resolving, .connecting, .waitingToReconnect, .closed:
            impossible("transportLost")
        }
    }

    /// The command timer: fails what is past its deadline.
    mutating func commandTimerFired(now: UInt64, into actions: inout [Action]) {
        commandTimerDeadline = nil
        while let command = pending.first, command.deadline <= now {
            pending.popFirst()
            let timeout = "\(settings.commandTimeout)"
            if machineState == .ready {
                // Written: its reply cannot be skipped, so the connection goes,
                // and the commands written after it with it.
                actions.append(.fail(command.id, .timedOut("no reply within \(timeout)")))
                connectionFailed(.connectionLost("dropped after a command got no reply within \(timeout)"), now: now, into: &actions)
                return
            }
            let reason = lastFailure.map { "; last failure: \($0)" } ?? ""
            actions.append(.fail(command.id, .timedOut("no connection to Redis within \(timeout)\(reason)")))
        }
        updateCommandTimer(into: &actions)
    }

    // MARK: Transitions

    private mutating func beginAttempt(now: UInt64, into actions: inout [Action]) {
        attempt += 1
        actions.append(.armConnectTimer(at: EventLoop.deadline(after: settings.connectTimeout, from: now)))
        switch endpoint {
        case .tcp(let host, let port):
            machineState = .resolving
            actions.append(.resolve(host: host, port: port, attempt: attempt))
        case .unix(let path):
            machineState = .connecting(addresses: [.unix(path: path)], next: 1, lastError: "")
            actions.append(.connect(.unix(path: path)))
        }
    }

    private mutating func becomeReady(into actions: inout [Action]) {
        machineState = .ready
        consecutiveFailures = 0
        lastFailure = nil
        actions.append(.cancelConnectTimer)
        actions.append(.report(.connected))
        if !pending.isEmpty {
            actions.append(.write(pending.map(\.id)))
        }
    }

    /// An attempt failed before the connection was ready: back off; the
    /// queued commands keep waiting (within their deadlines).
    private mutating func attemptFailed(_ error: RedisError, now: UInt64, into actions: inout [Action]) {
        switch machineState {
        case .connecting, .handshaking: actions.append(.closeTransport)
        case .resolving: break
        case .idle, .ready, .waitingToReconnect, .closed: impossible("attemptFailed")
        }
        actions.append(.cancelConnectTimer)
        consecutiveFailures += 1
        lastFailure = error.reason
        let delay = backoffDelay()
        retry(after: delay, now: now, into: &actions)
        actions.append(.report(.attemptFailed(error, retryIn: delay)))
    }

    /// A ready connection failed: its written commands fail with `error`.
    private mutating func connectionFailed(_ error: RedisError, now: UInt64, into actions: inout [Action]) {
        guard machineState == .ready else { impossible("connectionFailed") }
        actions.append(.closeTransport)
        failAllPending(error, into: &actions)
        consecutiveFailures = 1
        lastFailure = error.reason
        let delay = backoffDelay()
        retry(after: delay, now: now, into: &actions)
        actions.append(.report(.lost(error, retryIn: delay)))
    }

    private mutating func retry(after delay: UInt64, now: UInt64, into actions: inout [Action]) {
        let (until, overflow) = now.addingReportingOverflow(delay)
        machineState = .waitingToReconnect(until: overflow ? .max : until)
        actions.append(.armReconnectTimer(at: overflow ? .max : until))
    }

    /// base·2^(n−1), capped; half of it fixed, half random.
    private mutating func backoffDelay() -> UInt64 {
        Backoff(base: settings.reconnectBase.saturatingNanoseconds, cap: settings.reconnectCap.saturatingNanoseconds)
            .delay(afterFailures: consecutiveFailures, random: &random)
    }

    private mutating func failAllPending(_ error: RedisError, into actions: inout [Action]) {
        for command in pending { actions.append(.fail(command.id, error)) }
        pending.removeAll()
        updateCommandTimer(into: &actions)
    }

    /// Arms the command timer for the front's deadline when that changed.
    private mutating func updateCommandTimer(into actions: inout [Action]) {
        let wanted = pending.first?.deadline
        guard wanted != commandTimerDeadline else { return }
        commandTimerDeadline = wanted
        actions.append(.setCommandTimer(at: wanted))
    }

    private func impossible(_ event: String) -> Never {
        preconditionFailure("RedisConnectionMachine: event \(event) in state \(machineState)")
    }
}

extension RedisError {
    /// The text after the kind, for quoting in another error.
    var reason: String {
        switch self {
        case .connectFailed(let text), .timedOut(let text), .connectionLost(let text),
             .serverError(let text), .protocolError(let text): text
        case .tooManyQueued(let limit): "\(limit) commands waiting already"
        case .closed: "closed"
        }
    }
}
