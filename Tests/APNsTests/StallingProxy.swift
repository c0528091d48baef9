import Dispatch
import EventLoop
import Foundation
import Glibc
import Locking

/// A TCP relay between the client and a server that can stop forwarding
/// (a peer that hangs without closing), on its own thread.
final class StallingProxy: @unchecked Sendable {
    let port: UInt16
    private let listener: Socket
    private let targetPort: UInt16
    private let stalled = Locked(false)
    private let stopped = Locked(false)
    private let closeRequested = Locked(false)
    private let closed = DispatchSemaphore(value: 0)
    private let thread: Thread

    init(targetPort: UInt16) throws {
        listener = try Socket.listen(host: "127.0.0.1", port: 0)
        port = listener.localPort
        self.targetPort = targetPort
        let fd = listener.fileDescriptor
        let stalled = self.stalled
        let stopped = self.stopped
        let closeRequested = self.closeRequested
        let closed = self.closed
        thread = Thread {
            StallingProxy.run(listenerFD: fd, targetPort: targetPort, stalled: stalled, stopped: stopped, closed: closed,
                              closeRequested: closeRequested)
        }
        thread.start()
    }

    func stall() { stalled.withLock { $0 = true } }

    /// Closes both sides of every relayed connection at the next poll round;
    /// true once the client's side acknowledged the FIN (within 5 s).
    func closeConnections() -> Bool {
        closeRequested.withLock { $0 = true }
        return closed.wait(timeout: .now() + 5) == .success
    }

    func stop() {
        stopped.withLock { $0 = true }
        usleep(100_000)
        listener.close()
    }

    /// Polls the socket's TCP state until our FIN was acknowledged.
    private static func waitForFINAcknowledged(_ fd: Int32, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var info = tcp_info()
            var length = socklen_t(MemoryLayout<tcp_info>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return false }
            let state = Int(info.tcpi_state)
            if state != TCP_ESTABLISHED && state != TCP_FIN_WAIT1 { return true }
            usleep(1_000)
        }
        return false
    }

    /// poll(2)-driven copy loop; bounded by `stopped`.
    private static func run(listenerFD: Int32, targetPort: UInt16, stalled: Locked<Bool>, stopped: Locked<Bool>,
                            closed: DispatchSemaphore, closeRequested: Locked<Bool>) {
        var pairs: [(Int32, Int32)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.withLock({ $0 }) {
            if closeRequested.withLock({ value in
                defer { value = false }
                return value
            }) {
                // close(2) returns before loopback delivers the FIN (its
                // softirq can wait behind a loaded machine's threads, well
                // beyond 200 ms in CI). The peer's kernel acknowledges the FIN
                // as it queues it on the peer's socket: FIN_WAIT2 says the
                // close is there.
                var acknowledged = true
                for (a, b) in pairs {
                    close(b)
                    shutdown(a, Int32(SHUT_WR))
                    acknowledged = acknowledged && StallingProxy.waitForFINAcknowledged(a, timeout: 5)
                    close(a)
                }
                pairs.removeAll()
                if acknowledged { closed.signal() }
            }
            var fds = [pollfd(fd: listenerFD, events: Int16(POLLIN), revents: 0)]
            for (a, b) in pairs {
                fds.append(pollfd(fd: a, events: Int16(POLLIN), revents: 0))
                fds.append(pollfd(fd: b, events: Int16(POLLIN), revents: 0))
            }
            guard poll(&fds, nfds_t(fds.count), 20) > 0 else { continue }
            let polledPairs = pairs.count
            if fds[0].revents & Int16(POLLIN) != 0 {
                let client = accept(listenerFD, nil, nil)
                if client >= 0 {
                    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                    var address = sockaddr_in()
                    address.sin_family = sa_family_t(AF_INET)
                    address.sin_port = targetPort.bigEndian
                    address.sin_addr.s_addr = inet_addr("127.0.0.1")
                    let connected = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                    if connected == 0 { pairs.append((client, server)) } else { close(client); close(server) }
                }
            }
            if stalled.withLock({ $0 }) { continue }
            var closed: Set<Int> = []
            for (index, (a, b)) in pairs.prefix(polledPairs).enumerated() {
                for (from, to, slot) in [(a, b, 1 + index * 2), (b, a, 2 + index * 2)]
                where fds[slot].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                    if count <= 0 {
                        closed.insert(index)
                        continue
                    }
                    var offset = 0
                    while offset < count {
                        let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + offset, count - offset) }
                        if written <= 0 { break }
                        offset += written
                    }
                }
            }
            for index in closed.sorted(by: >) {
                close(pairs[index].0)
                close(pairs[index].1)
                pairs.remove(at: index)
            }
        }
        for (a, b) in pairs {
            close(a)
            close(b)
        }
    }
}
