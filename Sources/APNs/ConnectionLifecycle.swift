import EventLoop
import RelayCore

/// Where an APNs connection is in its life (DESIGN §5).
public enum APNsConnectionState: String, Sendable, CaseIterable, Comparable {
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

/// Why a connection ended, classed by the phase it died in.
public enum ConnectionFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Name resolution, TCP connect, or the connect timeout.
    case connect(String)
    /// TLS handshake, certificate verification (either side), ALPN, or the
    /// first HTTP/2 exchange before the server's SETTINGS arrived.
    case tls(String)
    /// The connection died after it was ready (EOF, reset, TLS or HTTP/2
    /// error, no PING answer).
    case lost(String)

    public var description: String {
        switch self {
        case .connect(let detail), .tls(let detail), .lost(let detail): detail
        }
    }

    /// The outcome for a request that was waiting for a connection (never
    /// sent) when this failure happened.
    var outcomeForWaitingRequest: DeliveryOutcome {
        switch self {
        case .connect(let detail): .connectFailed(detail)
        case .tls(let detail): .tlsFailed(detail)
        case .lost(let detail): .streamFailed(detail)
        }
    }
}

/// The lifecycle of one APNs connection as a value: events in, actions out.
/// `APNsConnection` performs the actions (sockets, TLS, nghttp2); this type
/// does no I/O, so every transition is unit-tested on its own.
///
/// idle → resolving → connecting → handshaking → ready → draining → closed;
/// any state can go to closed. "handshaking" covers TLS and the wait for the
/// server's first SETTINGS (RFC 9113 §3.4: the server preface), so "ready"
/// means the limits of the server are known.
struct ConnectionLifecycle: Equatable {
    enum Action: Equatable {
        case resolve
        case armConnectTimeout
        case connect(SocketAddress)
        case startTLSHandshake
        case startHTTP2Session
        case cancelConnectTimeout
        case becameReady
        case sendGoAway
        /// Tear down; nil for an orderly close.
        case close(ConnectionFailure?)
    }

    private(set) var state: APNsConnectionState = .idle
    private var addresses: [SocketAddress] = []
    private var nextAddress = 0
    private var lastConnectError = ""
    /// Whether the connection ever reached `ready` (a failure before that is
    /// a failed attempt, which drives the pool's backoff).
    private(set) var wasReady = false

    mutating func start() -> [Action] {
        guard state == .idle else { return [] }
        state = .resolving
        return [.armConnectTimeout, .resolve]
    }

    mutating func resolved(_ addresses: [SocketAddress]) -> [Action] {
        guard state == .resolving else { return [] }
        guard let first = addresses.first else { return close(.connect("host resolved to no address")) }
        self.addresses = addresses
        nextAddress = 1
        state = .connecting
        return [.connect(first)]
    }

    mutating func resolveFailed(_ reason: String) -> [Action] {
        guard state == .resolving else { return [] }
        return close(.connect("cannot resolve host: \(reason)"))
    }

    /// The TCP connect to the current address failed: try the next one
    /// (getaddrinfo's order), else give up with the last error.
    mutating func connectFailed(_ reason: String) -> [Action] {
        guard state == .connecting else { return [] }
        lastConnectError = reason
        if nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            return [.connect(address)]
        }
        return close(.connect(reason))
    }

    mutating func connected() -> [Action] {
        guard state == .connecting else { return [] }
        state = .handshaking
        return [.startTLSHandshake]
    }

    /// ALPN must have selected h2: OpenSSL's client carries on without ALPN
    /// when the server picks none (RFC 7301 §3.2 leaves that to the client).
    mutating func handshakeCompleted(alpn: String?) -> [Action] {
        guard state == .handshaking else { return [] }
        guard alpn == "h2" else {
            return close(.tls(alpn.map { "server selected ALPN \($0), not h2" } ?? "server selected no ALPN protocol (h2 required)"))
        }
        return [.startHTTP2Session]
    }

    /// The server's SETTINGS arrived (every SETTINGS frame comes here).
    mutating func settingsReceived() -> [Action] {
        guard state == .handshaking else { return [] }
        state = .ready
        wasReady = true
        return [.cancelConnectTimeout, .becameReady]
    }

    /// The server sent GOAWAY: no new streams here; the open ones finish.
    mutating func goAwayReceived() -> [Action] {
        switch state {
        case .ready:
            state = .draining
            return []
        case .resolving, .connecting, .handshaking:
            return close(.tls("server sent GOAWAY before the connection was ready"))
        case .idle, .draining, .closed:
            return []
        }
    }

    /// Our own graceful close (shutdown): GOAWAY, let open streams finish.
    mutating func drain() -> [Action] {
        switch state {
        case .ready:
            state = .draining
            return [.sendGoAway]
        case .idle, .resolving, .connecting, .handshaking:
            return close(nil)
        case .draining, .closed:
            return []
        }
    }

    /// A draining connection has no stream left.
    mutating func drained() -> [Action] {
        guard state == .draining else { return [] }
        return close(nil)
    }

    mutating func connectTimedOut(after timeout: String) -> [Action] {
        switch state {
        case .idle, .resolving, .connecting:
            return close(.connect("connect timed out after \(timeout)" + (lastConnectError.isEmpty ? "" : " (\(lastConnectError))")))
        case .handshaking:
            return close(.tls("TLS/HTTP/2 handshake timed out after \(timeout)"))
        case .ready, .draining, .closed:
            return []
        }
    }

    /// The transport or protocol failed: the phase decides the class.
    mutating func failed(_ reason: String) -> [Action] {
        switch state {
        case .idle, .resolving, .connecting:
            return close(.connect(reason))
        case .handshaking:
            return close(.tls(reason))
        case .ready, .draining:
            return close(.lost(reason))
        case .closed:
            return []
        }
    }

    private mutating func close(_ failure: ConnectionFailure?) -> [Action] {
        state = .closed
        return [.close(failure)]
    }
}
