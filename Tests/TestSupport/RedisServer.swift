import Foundation
import Glibc
import Locking

/// A `redis-server` a test starts for itself: on 127.0.0.1 at a free port
/// (never 6379, where Debian's own service may listen), with a unix socket
/// and its files in a temporary directory of its own, no snapshots, and
/// the append-only file only when asked. `kill()` and `stop()` signal the
/// process this helper started, by its PID; `restart()` brings it back on
/// the same port and directory. Needs Debian's `redis-server`
/// (`scripts/setup` installs it).
public final class RedisServer: Sendable {
    public struct Options: Sendable {
        /// `requirepass`: the default user's password.
        public var password: String?
        /// ACL users (Redis 6+), each `user <name> on ><password> ~* &* +@all`.
        public var users: [(name: String, password: String)] = []
        /// `appendonly yes` with `appendfsync always`: every write is on
        /// disk before its reply, so even SIGKILL loses nothing.
        public var appendOnly = false
        /// Further `--name value…` arguments, as redis-server reads them.
        public var extraArguments: [String] = []

        public init(password: String? = nil, users: [(name: String, password: String)] = [], appendOnly: Bool = false,
                    extraArguments: [String] = []) {
            self.password = password
            self.users = users
            self.appendOnly = appendOnly
            self.extraArguments = extraArguments
        }
    }

    public static let executable = "/usr/bin/redis-server"

    public let port: UInt16
    /// The temporary directory with the socket, the log and any data files.
    public let directory: String
    public var unixSocketPath: String { directory + "/redis.sock" }
    public var logPath: String { directory + "/redis.log" }
    private let options: Options
    /// The running server's process ID.
    private let process = Locked<pid_t?>(nil)

    /// Starts redis-server and returns once it accepts connections (within
    /// 10 s).
    public init(_ options: Options = Options()) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw RedisServerError(message: "\(Self.executable) is missing: run scripts/setup (Debian's redis-server)")
        }
        self.options = options
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The process ID of the running server, or nil once stopped.
    public var pid: Int32? { process.withLock { $0 } }

    /// A port the kernel just handed out for 127.0.0.1, released again:
    /// redis-server takes no port 0.
    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RedisServerError(message: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw RedisServerError(message: "bind: errno \(errno)") }
        let port = UInt16(bigEndian: address.sin_port)
        guard port != 6379 else { return try freePort() }
        return port
    }

    private func arguments() -> [String] {
        var arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--dir", directory,
            "--unixsocket", unixSocketPath, "--unixsocketperm", "700",
            "--save", "", "--appendonly", options.appendOnly ? "yes" : "no",
            "--daemonize", "no", "--logfile", logPath, "--databases", "16",
        ]
        if options.appendOnly { arguments += ["--appendfsync", "always"] }
        if let password = options.password { arguments += ["--requirepass", password] }
        for user in options.users {
            arguments += ["--user", user.name, "on", ">\(user.password)", "~*", "&*", "+@all"]
        }
        return arguments + options.extraArguments
    }

    /// posix_spawn, not Foundation's Process: a child inherits its
    /// spawner's signal mask, and the test runner's threads block nearly
    /// every signal (measured: SigBlk fffffffe3bfbea27), so a redis-server
    /// started by Process ignored SIGTERM. The child gets an empty mask and
    /// default handlers.
    private func start() throws {
        let arguments = [Self.executable] + arguments()
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var files = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&files)
        defer { posix_spawn_file_actions_destroy(&files) }
        posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let status = posix_spawn(&pid, Self.executable, &files, &attributes, &argv, environ)
        guard status == 0 else { throw RedisServerError(message: "posix_spawn: \(String(cString: strerror(status)))") }
        process.withLock { $0 = pid }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while !acceptsConnections() {
            let running = isRunning(pid)
            guard running, clock.now < deadline else {
                // An ended process was reaped already: nothing to signal.
                if running { stop() } else { process.withLock { $0 = nil } }
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                throw RedisServerError(message: "redis-server did not start on port \(port): \(log.suffix(500))")
            }
            usleep(10_000)
        }
        // Accepting is not serving: while it loads its append-only file
        // Redis answers commands with `-LOADING` (a restart's first command
        // got it under load). INFO is answered meanwhile.
        while (try? info("loading")) != "0" {
            guard clock.now < deadline else {
                throw RedisServerError(message: "redis-server on port \(port) still loading its data after 10 s")
            }
            usleep(10_000)
        }
    }

    /// Whether `pid` still runs; reaps it when it has ended.
    private func isRunning(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Whether a TCP connect to the port succeeds.
    private func acceptsConnections() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// SIGKILL to the server this helper started, and waits for it: no
    /// shutdown, no goodbye to clients (their connections are reset or see
    /// end of file).
    public func kill() {
        signalAndWait(SIGKILL)
    }

    /// SIGTERM (Redis' orderly shutdown), SIGKILL after 10 s; idempotent.
    public func stop() {
        signalAndWait(SIGTERM)
    }

    private func signalAndWait(_ signal: Int32) {
        guard let pid = process.withLock({ pid -> pid_t? in
            defer { pid = nil }
            return pid
        }) else { return }
        Glibc.kill(pid, signal)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while isRunning(pid) {
            if clock.now >= deadline {
                Glibc.kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                return
            }
            usleep(2_000)
        }
    }

    /// A field of `INFO` (`blocked_clients`, `connected_clients`…), asked
    /// over a connection of its own (logged in with the options' password),
    /// so a test can see the server's side without a client library.
    public func info(_ field: String) throws -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RedisServerError(message: "socket: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw RedisServerError(message: "connect to \(port): errno \(errno)") }
        // Inline commands (RESP's plain-text form) suffice for these words.
        let request = (options.password.map { "AUTH \($0)\r\n" } ?? "") + "INFO\r\n"
        guard Array(request.utf8).withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.utf8.count else {
            throw RedisServerError(message: "send: errno \(errno)")
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        // +OK (AUTH), then INFO's one bulk string: $<length>, its text, CRLF.
        func complete() -> Bool {
            guard let dollar = received.firstIndex(of: UInt8(ascii: "$")),
                  let lineEnd = received[dollar...].firstIndex(of: UInt8(ascii: "\r")),
                  let length = Int(String(decoding: received[(dollar + 1)..<lineEnd], as: UTF8.self)) else { return false }
            return received.count >= lineEnd + 2 + length + 2
        }
        while !complete() {
            if received.first == UInt8(ascii: "-") {
                throw RedisServerError(message: "INFO: \(String(decoding: received.prefix(200), as: UTF8.self))")
            }
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { throw RedisServerError(message: "INFO: connection ended") }
            received += chunk[..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        for line in text.split(separator: "\r\n") where line.hasPrefix(field + ":") {
            return String(line.dropFirst(field.count + 1))
        }
        return nil
    }

    /// Starts the server again on the same port, directory and options
    /// (stopping it first if it runs).
    public func restart() throws {
        stop()
        try start()
    }
}

public struct RedisServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { "RedisServer: \(message)" }
}
