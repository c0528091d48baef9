import Foundation
import Glibc
import Locking

/// A TCP listener on 127.0.0.1, port 0, under the tests' stand-in servers
/// (`HTTPTestServer`, the Redis tests' `FakeRedisServer`): one thread
/// accepts, one runs the server's `serve` for each connection; blocking
/// sockets, as nothing here is under load.
public final class TCPTestServer: Sendable {
    public let port: UInt16
    private let listener: Int32
    private let state = Locked(State())

    private struct State {
        var connections: [Int32] = []
        var accepted = 0
        var stopped = false
    }

    /// Listens; `start` begins accepting. `name` prefixes the errors.
    public init(name: String) throws(TCPTestServerError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TCPTestServerError(message: "\(name): socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ready else {
            close(fd)
            throw TCPTestServerError(message: "\(name): bind/listen: errno \(errno)")
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    /// Accepts connections and runs `serve` on a thread of its own for each,
    /// then closes it. Until `stop()`, the threads keep `serve` (and what it
    /// holds).
    public func start(serving serve: @escaping @Sendable (Int32) -> Void) {
        Thread.detachNewThread { [self] in acceptLoop(serve) }
    }

    /// Connections accepted so far.
    public var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// Connections open now (closed by neither side yet).
    public var openConnections: Int { state.withLock { $0.connections.count } }

    /// Stops accepting and ends every connection (a stalled one too). Only
    /// `shutdown(2)` here: each descriptor is closed by the thread that uses
    /// it, so none is closed twice or used after its number was reused by
    /// another test's socket.
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            Glibc.shutdown(listener, Int32(SHUT_RDWR))
            for fd in state.connections { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Writes all of `bytes` (no SIGPIPE); false once the peer is gone.
    /// `wrote` hears the count of each write.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], wrote: (Int) -> Void = { _ in }) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
            wrote(written)
        }
        return true
    }

    private func acceptLoop(_ serve: @escaping @Sendable (Int32) -> Void) {
        defer { close(listener) }
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let open = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.accepted += 1
                state.connections.append(fd)
                return true
            }
            guard open else {
                close(fd)
                return
            }
            Thread.detachNewThread { [self] in
                serve(fd)
                state.withLock { $0.connections.removeAll { $0 == fd } }
                close(fd)
            }
        }
    }
}

public struct TCPTestServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
