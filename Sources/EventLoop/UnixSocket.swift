import CEventLoop
import Glibc

extension Socket {
    /// The longest path a `sockaddr_un` holds (108 bytes, one for the NUL).
    public static let maxUnixPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Starts a non-blocking connect to the stream socket at `path` (a Unix
    /// domain socket: local services such as Redis). A local connect
    /// completes or fails at once: `.connected`, or `.inProgress` only if
    /// the kernel ever reports EINPROGRESS; EAGAIN (the listener's backlog
    /// is full) is a failure to retry later, not a wait. A path too long
    /// for `sockaddr_un` or holding a NUL byte fails with `.address`.
    public static func connect(unixPath path: String) throws(SocketError) -> (socket: Socket, progress: ConnectProgress) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxUnixPathBytes, !bytes.contains(0) else {
            throw SocketError(.address, errno: bytes.count > maxUnixPathBytes ? ENAMETOOLONG : EINVAL)
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | shim_SOCK_NONBLOCK_CLOEXEC(), 0)
        guard fd >= 0 else { throw SocketError(.socket, errno: errno) }
        let socket = Socket(adopting: fd)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        if result == 0 { return (socket, .connected) }
        switch errno {
        case EINPROGRESS, EINTR: return (socket, .inProgress)
        case let code: throw SocketError(.connect, errno: code)
        }
    }
}
