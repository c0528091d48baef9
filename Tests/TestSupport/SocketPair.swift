import EventLoop
import Glibc

/// A connected pair of non-blocking AF_UNIX stream sockets.
public func makeSocketPair() throws -> (Socket, Socket) {
    var fds: [Int32] = [0, 0]
    let result = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    guard result == 0 else { throw SocketError(.socket, errno: errno) }
    return (Socket(adopting: fds[0]), Socket(adopting: fds[1]))
}
