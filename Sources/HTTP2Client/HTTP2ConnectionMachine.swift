import EventLoop

/// Where a pool's HTTP/2 connection is in its life (ARCHITECTURE.md §4).
public enum HTTP2ConnectionState: String, Sendable, CaseIterable, Comparable {
    case idle, resolving, connecting, handshaking, ready, draining, closed

    /// Order of the lifecycle (pools ask "not yet ready", "still alive").
    private var rank: Int {
        switch self {
        case .idle: 0
        case .resolving: 1
        case .connecting: 2
        case .handshaking: 3
        case .ready: 4
        case .draining: 5
        case .closed: 6
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// The lifecycle of one HTTP/2 client connection as a value: events in, actions out.
/// `HTTP2Connection` performs the actions (sockets, TLS, nghttp2); this type
/// does no I/O, so every transition is unit-tested on its own.
///
/// idle → resolving → connecting → handshaking → ready → draining → closed;
/// any state can go to closed. "handshaking" covers TLS and the wait for the
/// server's first SETTINGS (RFC 9113 §3.4: the server preface), so "ready"
/// means the limits of the server are known.
///
/// An event that cannot happen in a state (the connection's I/O structure
/// rules it out) stops the process naming both; a late event that can
/// happen (a timer or resolver answer after the close, a second GOAWAY) is
/// a named, commented no-op.
struct HTTP2ConnectionMachine: Equatable {
    enum Action: Equatable {
        case resolve
        case armConnectTimeout
        case connect(SocketAddress)
        case startTLSHandshake
        case startHTTP2Session
        case cancelConnectTimeout
        case becameReady
        /// The server's GOAWAY turned a ready connection into a draining one:
        /// tell the owner (no new stream goes here).
        case announceDraining
        case sendGoAway
        /// Tear down; nil for an orderly close.
        case close(ConnectionFailure?)
    }

    enum State: Equatable {
        case idle
        case resolving
        /// Trying `addresses` in getaddrinfo's order; `next` is the one to
        /// try after the current; `lastError` why the previous one failed
        /// (quoted by the connect timeout).
        case connecting(addresses: [SocketAddress], next: Int, lastError: String)
        /// The TLS handshake is under way.
        case handshakingTLS
        /// TLS is done and h2 negotiated; the HTTP/2 session waits for the
        /// server's first SETTINGS.
        case awaitingSettings
        case ready
        case draining
        /// `wasReady`: the connection reached `ready` before (a failure
        /// before that is a failed attempt, which drives the pool's backoff).
        case closed(wasReady: Bool)
    }

    private(set) var machineState: State = .idle

    /// The state as pools, metrics and logs see it.
    var state: HTTP2ConnectionState {
        switch machineState {
        case .idle: .idle
        case .resolving: .resolving
        case .connecting: .connecting
        case .handshakingTLS, .awaitingSettings: .handshaking
        case .ready: .ready
        case .draining: .draining
        case .closed: .closed
        }
    }

    /// Whether the connection ever reached `ready`.
    var wasReady: Bool {
        switch machineState {
        case .ready, .draining: true
        case .closed(let wasReady): wasReady
        case .idle, .resolving, .connecting, .handshakingTLS, .awaitingSettings: false
        }
    }

    mutating func start(into actions: inout [Action]) {
        switch machineState {
        case .idle:
            machineState = .resolving
            // The connect timeout covers resolution too (getaddrinfo can hang).
            actions.append(.armConnectTimeout)
            actions.append(.resolve)
        case .closed:
            // A closed connection is never started again (the pool makes a
            // new one); asking does nothing.
            return
        case .resolving, .connecting, .handshakingTLS, .awaitingSettings, .ready, .draining:
            impossible("start")
        }
    }

    mutating func resolved(_ addresses: [SocketAddress], into actions: inout [Action]) {
        switch machineState {
        case .resolving:
            guard let first = addresses.first else { return close(.connect("host resolved to no address"), into: &actions) }
            machineState = .connecting(addresses: addresses, next: 1, lastError: "")
            actions.append(.connect(first))
        case .closed:
            // Late: the connect timeout or a drain closed the connection
            // while the resolver was still working.
            return
        case .idle, .connecting, .handshakingTLS, .awaitingSettings, .ready, .draining:
            impossible("resolved")
        }
    }

    mutating func resolveFailed(_ reason: String, into actions: inout [Action]) {
        switch machineState {
        case .resolving:
            close(.connect("cannot resolve host: \(reason)"), into: &actions)
        case .closed:
            // Late, as for `resolved`.
            return
        case .idle, .connecting, .handshakingTLS, .awaitingSettings, .ready, .draining:
            impossible("resolveFailed")
        }
    }

    /// The TCP connect to the current address failed: try the next one
    /// (getaddrinfo's order), else give up with the last error.
    mutating func connectFailed(_ reason: String, into actions: inout [Action]) {
        guard case .connecting(let addresses, let next, _) = machineState else { impossible("connectFailed") }
        if next < addresses.count {
            machineState = .connecting(addresses: addresses, next: next + 1, lastError: reason)
            actions.append(.connect(addresses[next]))
        } else {
            close(.connect(reason), into: &actions)
        }
    }

    mutating func connected(into actions: inout [Action]) {
        guard case .connecting = machineState else { impossible("connected") }
        machineState = .handshakingTLS
        actions.append(.startTLSHandshake)
    }

    /// ALPN must have selected h2: OpenSSL's client carries on without ALPN
    /// when the server picks none (RFC 7301 §3.2 leaves that to the client).
    mutating func handshakeCompleted(alpn: String?, into actions: inout [Action]) {
        guard case .handshakingTLS = machineState else { impossible("handshakeCompleted") }
        guard alpn == "h2" else {
            return close(.tls(alpn.map { "server selected ALPN \($0), not h2" } ?? "server selected no ALPN protocol (h2 required)"),
                         into: &actions)
        }
        machineState = .awaitingSettings
        actions.append(.startHTTP2Session)
    }

    /// The server's SETTINGS arrived (every SETTINGS frame comes here).
    mutating func settingsReceived(into actions: inout [Action]) {
        switch machineState {
        case .awaitingSettings:
            // The server's preface is complete (RFC 9113 §3.4): its limits are known.
            actions.append(.cancelConnectTimeout)
            actions.append(.becameReady)
            machineState = .ready
        case .ready, .draining:
            // Later SETTINGS change limits only (the session applies them).
            return
        case .closed:
            // A close decided inside `receive` (GOAWAY before ready) waits
            // until it returns; frames after it in the same read still come.
            return
        case .idle, .resolving, .connecting, .handshakingTLS:
            // No HTTP/2 session exists in these states.
            impossible("settingsReceived")
        }
    }

    /// The server sent GOAWAY: no new streams here; the open ones finish.
    mutating func goAwayReceived(into actions: inout [Action]) {
        switch machineState {
        case .ready:
            machineState = .draining
            actions.append(.announceDraining)
        case .awaitingSettings:
            close(.tls("server sent GOAWAY before the connection was ready"), into: &actions)
        case .draining, .closed:
            // A server may send several GOAWAYs (RFC 9113 §6.8: a first one
            // with 2^31-1, then the real last-stream-id): already draining,
            // or closed by the first one and torn down once `receive` returns.
            return
        case .idle, .resolving, .connecting, .handshakingTLS:
            // No HTTP/2 session exists in these states.
            impossible("goAwayReceived")
        }
    }

    /// Our own graceful close (shutdown): GOAWAY, let open streams finish.
    mutating func drain(into actions: inout [Action]) {
        switch machineState {
        case .idle, .resolving, .connecting, .handshakingTLS, .awaitingSettings:
            // Nothing to let finish: close at once.
            close(nil, into: &actions)
        case .ready:
            machineState = .draining
            actions.append(.sendGoAway)
        case .draining, .closed:
            // Already closing, by the server's GOAWAY or an earlier shutdown.
            return
        }
    }

    /// A draining connection has no stream left.
    mutating func drained(into actions: inout [Action]) {
        switch machineState {
        case .draining:
            close(nil, into: &actions)
        case .closed:
            // A close already happened (a drain before ready closes at once).
            return
        case .idle, .resolving, .connecting, .handshakingTLS, .awaitingSettings, .ready:
            impossible("drained")
        }
    }

    /// The peer ended the transport: EOF, a reset, or a failed write once
    /// everything left to read was read. After GOAWAY with every stream
    /// answered that is the server's orderly close (servers such as APNs
    /// close right after their GOAWAY; a server closing with bytes of ours still unread makes TCP
    /// send RST instead of FIN); otherwise the connection failed.
    mutating func transportEnded(_ reason: String, streamsLeft: Int, into actions: inout [Action]) {
        if case .draining = machineState, streamsLeft == 0 {
            close(nil, into: &actions)
        } else {
            failed(reason, into: &actions)
        }
    }

    mutating func connectTimedOut(after timeout: String, into actions: inout [Action]) {
        switch machineState {
        case .resolving:
            close(.connect("connect timed out after \(timeout)"), into: &actions)
        case .connecting(_, _, let lastError):
            close(.connect("connect timed out after \(timeout)" + (lastError.isEmpty ? "" : " (\(lastError))")), into: &actions)
        case .handshakingTLS, .awaitingSettings:
            close(.tls("TLS/HTTP/2 handshake timed out after \(timeout)"), into: &actions)
        case .ready, .draining, .closed:
            // Late: the timer fired in the pass that cancelled it.
            return
        case .idle:
            // The timer is armed by `start`.
            impossible("connectTimedOut")
        }
    }

    /// The transport or protocol failed: the phase decides the class.
    mutating func failed(_ reason: String, into actions: inout [Action]) {
        switch machineState {
        case .idle, .resolving, .connecting:
            close(.connect(reason), into: &actions)
        case .handshakingTLS, .awaitingSettings:
            close(.tls(reason), into: &actions)
        case .ready, .draining:
            close(.lost(reason), into: &actions)
        case .closed:
            // A failure noticed after the close (by a pass already under
            // way): the connection is gone already.
            return
        }
    }

    private mutating func close(_ failure: ConnectionFailure?, into actions: inout [Action]) {
        machineState = .closed(wasReady: wasReady)
        actions.append(.close(failure))
    }

    private func impossible(_ event: String) -> Never {
        preconditionFailure("HTTP2ConnectionMachine: event \(event) in state \(machineState)")
    }
}
