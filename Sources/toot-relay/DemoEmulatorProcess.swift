import Daemon
import Dispatch
import EventLoop
import Foundation

/// The demo's APNs and FCM emulator: the apns-emulator executable that the
/// package builds beside toot-relay, run as a child process, so that the
/// relay's binary links no emulator. The child dies with the relay, however
/// it ends (`spawnChildDyingWithParent`); its notification and FCM message
/// lines are copied to the relay's standard output, one whole line per
/// write, as the demo shows them.
final class DemoEmulatorProcess: DemoEmulator {
    private var child: pid_t?
    /// Copies the child's lines; signalled at the end of its output.
    private let forwarded = DispatchSemaphore(value: 0)

    /// How long the emulator may take to listen (it loads two PEM files).
    static let startTimeout: Duration = .seconds(10)

    func start(certificates: String) throws(StartupFailure) -> DemoEmulatorEndpoint {
        let path = Self.executable()
        guard access(path, X_OK) == 0 else {
            throw StartupFailure("demo: no apns-emulator beside toot-relay (\(path)): "
                + "build it with `swift build --product apns-emulator`")
        }
        let file = { (name: String) in certificates + "/" + name }
        // The service account's token_uri names the port, and the emulator
        // reads the file when it starts: the port is chosen first.
        let chosenPort = try Self.freeLoopbackPort()
        let account = try DemoServiceAccount.write(in: certificates, tokenEndpointPort: chosenPort)
        // Client certificates of the throwaway CA, the service account, no
        // connection log, each notification and FCM message a JSON line on
        // the one pipe (each line one write(2), whole up to PIPE_BUF, 4096
        // bytes, when both services write at once: pipe(7); the demo's
        // lines are shorter).
        let arguments = [path, "--host", "127.0.0.1", "--port", String(chosenPort), "--certificate", file("server.pem"),
                         "--key", file("server.key"), "--client-ca", file("ca.pem"), "--print", "--quiet",
                         "--fcm-service-account", account, "--fcm-record", "/dev/stdout"]
        // Close-on-exec: the child gets the write end as its standard
        // output only (dup2 clears the flag there).
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw StartupFailure("demo APNs emulator: pipe failed: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let pid: pid_t
        do {
            pid = try spawnChildDyingWithParent(path: path, arguments: arguments, standardOutput: ends[1],
                                                parentDeathSignal: SIGTERM)
        } catch {
            close(ends[0])
            close(ends[1])
            throw StartupFailure("demo APNs emulator: \(error)")
        }
        close(ends[1])
        child = pid
        // Its first line: `listening on 127.0.0.1:PORT`.
        let (line, rest) = Self.readLine(ends[0], within: Self.startTimeout)
        guard let line, line.hasPrefix("listening on "), let port = line.split(separator: ":").last.flatMap({ UInt16($0) })
        else {
            close(ends[0])
            child = nil
            Self.terminate(pid)
            throw StartupFailure("demo APNs emulator (\(path)) did not start: "
                + (line.map { "it said \"\($0)\"" } ?? "no `listening on` line within \(Self.startTimeout)"))
        }
        let descriptor = ends[0]
        let done = forwarded
        Thread {
            Self.forwardLines(from: descriptor, starting: rest)
            close(descriptor)
            done.signal()
        }.start()
        return DemoEmulatorEndpoint(port: port, fcmServiceAccountFile: account)
    }

    /// A port free on 127.0.0.1 now (the kernel's choice for port 0); the
    /// emulator binds it a moment later.
    static func freeLoopbackPort() throws(StartupFailure) -> UInt16 {
        do {
            let socket = try Socket.bound(to: SocketAddress(ip: "127.0.0.1", port: 0)!)
            defer { socket.close() }
            return socket.localPort
        } catch {
            throw StartupFailure("demo: no free port on 127.0.0.1: \(error)")
        }
    }

    /// SIGTERM (the emulator exits 0 with a statistics line on standard
    /// error), SIGKILL if it has not exited within 5 s; then the rest of its
    /// lines are copied.
    func stop() {
        guard let pid = child else { return }
        child = nil
        Self.terminate(pid)
        _ = forwarded.wait(timeout: .now() + 1)
    }

    private static func terminate(_ pid: pid_t) {
        kill(pid, SIGTERM)
        if !reap(pid, within: .seconds(5)) {
            kill(pid, SIGKILL)
            _ = reap(pid, within: .seconds(5))
        }
    }

    /// apns-emulator in the directory of this executable (`/proc/self/exe`).
    static func executable() -> String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("apns-emulator").path
    }

    /// The first line `descriptor` gives within `timeout` (nil at its end,
    /// or when the time is up), and the bytes read past it.
    static func readLine(_ descriptor: Int32, within timeout: Duration) -> (String?, [UInt8]) {
        let deadline = EventLoop.deadline(after: timeout, from: EventLoop.monotonicNanoseconds())
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.firstIndex(of: UInt8(ascii: "\n")) == nil {
            let now = EventLoop.monotonicNanoseconds()
            guard now < deadline else { return (nil, bytes) }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let waited = poll(&ready, 1, Int32(min((deadline - now) / 1_000_000 + 1, 1_000)))
            if waited < 0 && errno != EINTR { return (nil, bytes) }
            guard waited > 0 else { continue }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return (nil, bytes) }
            bytes += chunk[..<count]
        }
        let end = bytes.firstIndex(of: UInt8(ascii: "\n"))!
        return (String(decoding: bytes[..<end], as: UTF8.self), Array(bytes[(end + 1)...]))
    }

    /// Copies whole lines from `descriptor` to standard output until its
    /// end: one write(2) per line, so that no line of the relay's own lands
    /// inside one.
    static func forwardLines(from descriptor: Int32, starting pending: [UInt8]) {
        var pending = pending
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                writeAll(1, String(decoding: pending[...end], as: UTF8.self))
                pending.removeSubrange(...end)
            }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending += chunk[..<count]
        }
        if !pending.isEmpty { writeAll(1, String(decoding: pending, as: UTF8.self) + "\n") }
    }

    /// Whether `pid` exited (and was reaped) within `timeout`.
    static func reap(_ pid: pid_t, within timeout: Duration) -> Bool {
        let deadline = EventLoop.deadline(after: timeout, from: EventLoop.monotonicNanoseconds())
        while true {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno == ECHILD) { return true }
            if EventLoop.monotonicNanoseconds() >= deadline { return false }
            usleep(10_000)
        }
    }
}
