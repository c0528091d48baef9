import Glibc
import Locking
import TestSupport

/// A TCP server on 127.0.0.1, port 0, that answers what a test scripts
/// instead of Redis: garbage, nothing, or half a reply. A `TCPTestServer`
/// serves each connection on a thread of its own; bounded writes.
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

    var port: UInt16 { tcp.port }
    private let tcp: TCPTestServer
    private let script: Script
    private let written = Locked(0)

    init(_ script: Script) throws {
        tcp = try TCPTestServer(name: "FakeRedisServer")
        self.script = script
        tcp.start { [self] fd in serve(fd) }
    }

    /// Connections accepted so far.
    var acceptedConnections: Int { tcp.acceptedConnections }

    /// Bytes written to clients so far.
    var writtenBytes: Int { written.withLock { $0 } }

    /// Connections open now.
    var openConnections: Int { tcp.openConnections }

    /// Stops accepting and ends every connection.
    func stop() { tcp.stop() }

    private func serve(_ fd: Int32) {
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
        TCPTestServer.writeAll(fd, bytes) { count in written.withLock { $0 += count } }
    }
}
