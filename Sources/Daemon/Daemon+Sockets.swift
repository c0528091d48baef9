import EventLoop
import Glibc
import Observability
import Relay
import RelayCore

// systemd's socket activation (config/toot-relay.socket): systemd holds the
// listening sockets across restarts, so connections that arrive while one
// process stops and the next starts wait in the kernel's backlog instead of
// being refused (ARCHITECTURE.md §2).

/// The LISTEN_* variables of this process, read once and unset (so no
/// child takes them for its own), and the environment without them.
public func takePassedSockets(_ environment: [String: String]) throws(StartupFailure)
    -> (passed: SocketActivation.Passed, environment: [String: String]) {
    defer { for name in SocketActivation.variables { unsetenv(name) } }
    let rest = environment.filter { name, _ in !SocketActivation.variables.contains(name) }
    do {
        let passed = try SocketActivation.passedSockets(environment: environment, processID: getpid(),
                                                        knownNames: ListenerSocketName.all)
        return (passed, rest)
    } catch {
        throw StartupFailure(error.description)
    }
}

/// The listening sockets systemd passed, each checked and by its listener.
struct PassedListeners {
    var webPush: Socket?
    var api: Socket?
    var metrics: Socket?

    /// Checks each passed socket (an open, listening TCP socket, for a
    /// listener `configuration` switches on) and points the configuration
    /// of its listener at the socket's address. One line naming the socket
    /// on any problem.
    init(_ passed: SocketActivation.Passed, configuration: inout Configuration,
         logger: Logger) throws(StartupFailure) {
        switch passed {
        case .none:
            return
        case .forAnotherProcess(let pid):
            logger.info("LISTEN_PID \(pid) is another process: its sockets are not this one's; binding the ports")
            return
        case .sockets(let sockets):
            for passedSocket in sockets {
                guard let name = ListenerSocketName(rawValue: passedSocket.name) else {
                    preconditionFailure("SocketActivation passed an unknown name: \(passedSocket.name)")
                }
                if let problem = name.problem(with: configuration) { throw StartupFailure(problem) }
                let socket: Socket
                do { socket = try Socket(passedListener: passedSocket.fileDescriptor, name: passedSocket.name) } catch {
                    throw StartupFailure(error.description)
                }
                guard let address = socket.localAddress else {
                    throw StartupFailure("socket \(passedSocket.fileDescriptor) (`\(passedSocket.name)`): no local address")
                }
                configuration = name.configuration(configuration, listeningOn: address)
                logger.info("socket `\(name.rawValue)` from systemd: \(address)")
                switch name {
                case .webPush: webPush = socket
                case .api: api = socket
                case .metrics: metrics = socket
                }
            }
        }
    }
}
