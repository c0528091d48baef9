import Foundation
import Glibc
import Locking

/// A TCP server on 127.0.0.1, port 0, that answers what a test scripts
/// instead of Redis: garbage, nothing, or half a reply. One thread accepts,
/// one serves each connection; blocking sockets, bounded writes.
final class FakeRedisServer: Sendable {
    enum Script: Sendable {
        /// Answers each read (a command, as the tests send one at a time)
        /// with these bytes.
        case answer([UInt8])
        /// Writes `prefix`, then `filler` again and again, until the client
        /// goes or `limit` bytes were written.
        case endless(prefix: [UInt8], filler: [UInt8], limit: Int)
        /// Reads and never answers.
        case silent
        /// On the first read, writes these bytes and closes.
        case closeAfter([UInt8])
    }

    let port: UInt16
    private let listener: Int32
    private let script: Script
    private let state = Locked(State())

    private struct State {
        var connections: [Int32] = []
        var accepted = 0
        var written = 0
        var stopped = false
    }

    init(_ script: Script) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FakeRedisServerError(message: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ready else {
            close(fd)
            throw FakeRedisServerError(message: "bind/listen: errno \(errno)")
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        self.script = script
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Connections accepted so far.
    var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// Bytes written to clients so far.
    var writtenBytes: Int { state.withLock { $0.written } }

    /// Connections open now.
    var openConnections: Int { state.withLock { $0.connections.count } }

    /// Stops accepting and ends every connection; each thread closes its own
    /// descriptor (see HTTPTestServer.stop).
    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            Glibc.shutdown(listener, Int32(SHUT_RDWR))
            for fd in state.connections { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
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
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            state.withLock { $0.connections.removeAll { $0 == fd } }
            close(fd)
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while read(fd, &buffer, buffer.count) > 0 {
            switch script {
            case .answer(let bytes):
                guard write(fd, bytes) else { return }
            case .endless(let prefix, let filler, let limit):
                guard write(fd, prefix) else { return }
                var total = prefix.count
                while total < limit, write(fd, filler) { total += filler.count }
                return
            case .silent:
                continue
            case .closeAfter(let bytes):
                _ = write(fd, bytes)
                return
            }
        }
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
            state.withLock { $0.written += written }
        }
        return true
    }
}

struct FakeRedisServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { "FakeRedisServer: \(message)" }
}
