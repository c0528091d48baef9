import EventLoop
import Foundation
import Glibc
import Testing

@Suite("Unix domain socket connect")
struct UnixSocketTests {
    /// A listening AF_UNIX stream socket at a fresh path; the descriptor and path.
    static func listener() throws -> (Int32, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("unix-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/s.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && listen(fd, 4) == 0)
        return (fd, path)
    }

    @Test("connects at once to a listening socket, non-blocking, and carries bytes both ways")
    func connects() throws {
        let (listening, path) = try Self.listener()
        defer {
            close(listening)
            try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        }
        let (socket, progress) = try Socket.connect(unixPath: path)
        #expect(progress == .connected)
        #expect(fcntl(socket.fileDescriptor, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(socket.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        let accepted = accept(listening, nil, nil)
        defer { close(accepted) }
        let ping = Array("PING\r\n".utf8)
        #expect(ping.withUnsafeBytes { socket.write($0) } == .bytes(6))
        var received = [UInt8](repeating: 0, count: 16)
        #expect(read(accepted, &received, 16) == 6)
        #expect(Array(received.prefix(6)) == ping)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(buffer.withUnsafeMutableBytes { socket.read(into: $0) } == .wouldBlock)
    }

    @Test("a path nobody listens on fails with the connect's errno", arguments: [("/nonexistent/redis.sock", ENOENT)])
    func missingPath(_ path: String, _ code: Int32) {
        #expect(throws: SocketError(.connect, errno: code)) { try Socket.connect(unixPath: path) }
    }

    @Test("a path sockaddr_un cannot hold, or with a NUL byte, is refused before any socket", arguments: [
        ("/" + String(repeating: "p", count: Socket.maxUnixPathBytes), ENAMETOOLONG),
        ("/tmp/a\u{0}b", EINVAL),
        ("", EINVAL),
    ])
    func badPath(_ path: String, _ code: Int32) {
        #expect(Socket.maxUnixPathBytes == 107)
        #expect(throws: SocketError(.address, errno: code)) { try Socket.connect(unixPath: path) }
    }
}
