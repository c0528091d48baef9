// Two TLSConnections over a socket pair, driven on one thread: the harness
// the connection and context tests share.
import Glibc
import Testing
import TestSupport
import TLS

/// Two connected non-blocking sockets (AF_UNIX socketpair: loopback only).
final class SocketPair {
    let client: Int32
    let server: Int32
    private var clientOpen = true

    init() throws {
        // OpenSSL writes with write(2): a peer that went away must give EPIPE, not kill the test process.
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw TestCertificatesError(message: "socketpair: \(String(cString: strerror(errno)))")
        }
        client = fds[0]
        server = fds[1]
    }

    func closeClient() {
        if clientOpen { close(client) }
        clientOpen = false
    }

    deinit {
        if clientOpen { close(client) }
        close(server)
    }
}

/// Whether a side is done with its handshake, and how.
enum HandshakeState: Equatable {
    case pending(TLSResult)
    case finished(TLSResult)

    var result: TLSResult {
        switch self {
        case .pending(let result), .finished(let result): return result
        }
    }
}

/// Waits (bounded) until one of the sockets is ready for what its side wants.
func waitForSockets(_ wants: [(fd: Int32, read: Bool, write: Bool)], milliseconds: Int32 = 50) {
    var fds = wants.map { want in
        pollfd(fd: want.fd, events: Int16((want.read ? POLLIN : 0) | (want.write ? POLLOUT : 0)), revents: 0)
    }
    _ = poll(&fds, nfds_t(fds.count), milliseconds)
}

func pollEvents(for result: TLSResult) -> (read: Bool, write: Bool) {
    switch result {
    case .wantWrite: return (false, true)
    default: return (true, false)
    }
}

/// Drives both handshakes on one thread until each side is complete or has
/// failed, or a bounded number of steps / seconds have passed.
func driveHandshakes(_ client: TLSConnection, _ server: TLSConnection, sockets: SocketPair) -> (client: TLSResult, server: TLSResult) {
    var clientState = HandshakeState.pending(.wantWrite)
    var serverState = HandshakeState.pending(.wantRead)
    let deadline = ContinuousClock.now + .seconds(10)
    for _ in 0..<2_000 {
        for (connection, isClient) in [(client, true), (server, false)] {
            guard case .pending = isClient ? clientState : serverState else { continue }
            let result = connection.handshake()
            let state: HandshakeState
            switch result {
            case .wantRead, .wantWrite: state = .pending(result)
            case .complete, .closed, .failed: state = .finished(result)
            }
            if isClient { clientState = state } else { serverState = state }
        }
        if case .finished = clientState, case .finished = serverState { break }
        if ContinuousClock.now > deadline { break }
        var wants: [(fd: Int32, read: Bool, write: Bool)] = []
        if case .pending(let result) = clientState {
            let events = pollEvents(for: result)
            wants.append((sockets.client, events.read, events.write))
        }
        if case .pending(let result) = serverState {
            let events = pollEvents(for: result)
            wants.append((sockets.server, events.read, events.write))
        }
        waitForSockets(wants)
    }
    return (clientState.result, serverState.result)
}

/// Reads on `connection` until something other than "want" happens (bounded):
/// how a client learns of an alert the server sent after the client's
/// handshake had already completed (TLS 1.3 client authentication).
func readUntilOutcome(_ connection: TLSConnection, fd: Int32, maximumWaits: Int = 500) -> TLSIOResult {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let deadline = ContinuousClock.now + .seconds(5)
    var last = TLSIOResult.wantRead
    for _ in 0..<maximumWaits {
        last = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
        switch last {
        case .wantRead, .wantWrite:
            if ContinuousClock.now > deadline { return last }
            let events = last == .wantWrite ? (false, true) : (true, false)
            waitForSockets([(fd, events.0, events.1)])
        default:
            return last
        }
    }
    return last
}

struct Setup {
    var serverCertificate = TestCertificates.serverCertificate
    var serverKey = TestCertificates.serverKey
    var serverALPN = ["h2"]
    var clientCAFile: String? = TestCertificates.caCertificate
    /// false: the server requests a client certificate but takes a client without one.
    var requireClientCertificate = true
    var clientIdentity: String? = TestCertificates.clientP12
    var clientTrustedRoots: String? = TestCertificates.caCertificate
    var clientALPN = ["h2"]
    var serverName: String? = "localhost"
    var serverLimitedToTLS12 = false
}

/// A client and a server connection over a socket pair, per `setup`.
final class Peers {
    let sockets: SocketPair
    let client: TLSConnection
    let server: TLSConnection

    init(_ setup: Setup = Setup()) throws {
        let serverIdentity = try TLSIdentity.pem(
            certificateFile: TestCertificates.path(setup.serverCertificate),
            privateKeyFile: TestCertificates.path(setup.serverKey))
        let serverContext = try TLSContext.server(
            identity: serverIdentity, alpn: setup.serverALPN,
            clientCAFile: try setup.clientCAFile.map(TestCertificates.path),
            requireClientCertificate: setup.requireClientCertificate)
        if setup.serverLimitedToTLS12 {
            try #require(serverContext.limitToTLS12())
        }
        let clientIdentity: TLSIdentity? = try setup.clientIdentity.map { name in
            name.hasSuffix(".p12")
                ? try TLSIdentity.pkcs12(file: TestCertificates.path(name), password: TestCertificates.p12Password)
                : try TLSIdentity.pem(
                    certificateFile: TestCertificates.path(name),
                    privateKeyFile: TestCertificates.path(name.replacingSuffix(".pem", with: ".key")))
        }
        let clientContext = try TLSContext.client(
            trustedRootsFile: try setup.clientTrustedRoots.map(TestCertificates.path),
            identity: clientIdentity, alpn: setup.clientALPN)
        sockets = try SocketPair()
        client = try TLSConnection(context: clientContext, fd: sockets.client, serverName: setup.serverName)
        server = try TLSConnection(context: serverContext, fd: sockets.server, serverName: nil)
    }

    func handshake() -> (client: TLSResult, server: TLSResult) {
        driveHandshakes(client, server, sockets: sockets)
    }
}

extension String {
    func replacingSuffix(_ suffix: String, with replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self
    }
}

func verifyReason(_ result: TLSResult) -> String? {
    if case .failed(let error) = result, case .certificateVerifyFailed(let reason) = error.kind { return reason }
    return nil
}

func isFailure(_ result: TLSIOResult) -> Bool {
    if case .failed = result { return true }
    return false
}
