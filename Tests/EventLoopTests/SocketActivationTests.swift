import EventLoop
import Glibc
import Testing

private let names = ["webpush", "api", "metrics"]
private let pid: Int32 = 4242

private func passed(_ environment: [String: String]) throws(SocketActivationError) -> SocketActivation.Passed {
    try SocketActivation.passedSockets(environment: environment, processID: pid, knownNames: names)
}

@Suite("Socket activation: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES")
struct SocketActivationTests {
    @Test("sockets passed to this process are named, from descriptor 3 on", arguments: [
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "webpush"],
         [PassedSocket(fileDescriptor: 3, name: "webpush")]),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "api:webpush:metrics"],
         [PassedSocket(fileDescriptor: 3, name: "api"), PassedSocket(fileDescriptor: 4, name: "webpush"),
          PassedSocket(fileDescriptor: 5, name: "metrics")]),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "metrics:webpush"],
         [PassedSocket(fileDescriptor: 3, name: "metrics"), PassedSocket(fileDescriptor: 4, name: "webpush")]),
    ])
    func named(environment: [String: String], expected: [PassedSocket]) throws {
        #expect(try passed(environment) == .sockets(expected))
    }

    @Test("without LISTEN_PID or LISTEN_FDS nothing was passed; another LISTEN_PID is another process's", arguments: [
        ([:], SocketActivation.Passed.none),
        (["LISTEN_FDS": "1", "LISTEN_FDNAMES": "webpush"], .none),
        (["LISTEN_PID": "4242"], .none),
        (["LISTEN_PID": "4242", "LISTEN_FDNAMES": "webpush"], .none),
        (["LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "webpush"], .forAnotherProcess(1)),
        // Not ours: its other variables are not ours to judge either.
        (["LISTEN_PID": "77", "LISTEN_FDS": "junk", "LISTEN_FDNAMES": "x:y"], .forAnotherProcess(77)),
    ])
    func notPassed(environment: [String: String], expected: SocketActivation.Passed) throws {
        #expect(try passed(environment) == expected)
    }

    @Test("hostile values are one line naming what to fix", arguments: [
        (["LISTEN_PID": "", "LISTEN_FDS": "1"], "LISTEN_PID: \"\" is not a process id"),
        (["LISTEN_PID": "-4242", "LISTEN_FDS": "1"], "LISTEN_PID: \"-4242\" is not a process id"),
        (["LISTEN_PID": "0", "LISTEN_FDS": "1"], "LISTEN_PID: \"0\" is not a process id"),
        (["LISTEN_PID": " 4242", "LISTEN_FDS": "1"], "LISTEN_PID: \" 4242\" is not a process id"),
        (["LISTEN_PID": "99999999999999999999", "LISTEN_FDS": "1"], "LISTEN_PID: \"99999999999999999999\" is not a process id"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "one"], "LISTEN_FDS: \"one\" is not a number of sockets (1 or more)"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "-1"], "LISTEN_FDS: \"-1\" is not a number of sockets (1 or more)"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "0"], "LISTEN_FDS: \"0\" is not a number of sockets (1 or more)"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1.5"], "LISTEN_FDS: \"1.5\" is not a number of sockets (1 or more)"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2147483648"], "LISTEN_FDS: \"2147483648\" is not a number of sockets (1 or more)"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1000", "LISTEN_FDNAMES": "webpush"],
         "LISTEN_FDS: 1000 sockets passed; the relay takes at most 3, one each named `webpush`, `api`, `metrics`"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "webpush"],
         "LISTEN_FDNAMES: 1 names for the 2 sockets of LISTEN_FDS"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "webpush:api"],
         "LISTEN_FDNAMES: 2 names for the 1 sockets of LISTEN_FDS"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1"],
         "socket 3 is named \"unknown\"; the relay takes sockets named `webpush`, `api`, `metrics`: set FileDescriptorName= in its .socket unit"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "toot-relay.socket"],
         "socket 3 is named \"toot-relay.socket\"; the relay takes sockets named `webpush`, `api`, `metrics`: set FileDescriptorName= in its .socket unit"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "webpush:"],
         "socket 4 is named \"\"; the relay takes sockets named `webpush`, `api`, `metrics`: set FileDescriptorName= in its .socket unit"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "web\u{1B}[31mpush\n"],
         "socket 3 is named \"web\\u{1B}[31mpush\\n\"; the relay takes sockets named `webpush`, `api`, `metrics`: set FileDescriptorName= in its .socket unit"),
        (["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "webpush:webpush"],
         "LISTEN_FDNAMES: two sockets are named `webpush`; each listener takes one"),
    ])
    func hostile(environment: [String: String], message: String) {
        #expect(throws: SocketActivationError(message)) { try passed(environment) }
    }

    @Test("a name is shown at most 64 characters long")
    func longNameIsCut() {
        let error = #expect(throws: SocketActivationError.self) {
            try passed(["LISTEN_PID": "4242", "LISTEN_FDS": "1", "LISTEN_FDNAMES": String(repeating: "n", count: 5000)])
        }
        #expect(error?.description.contains("\"" + String(repeating: "n", count: 64) + "…\"") == true)
        #expect((error?.description.count ?? 0) < 200)
    }
}

/// A descriptor number for a test, closed by the test unless a `Socket` took it.
private func tcpSocket(type: Int32 = Int32(SOCK_STREAM.rawValue), listening: Bool) throws -> Int32 {
    let fd = socket(AF_INET, type, 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    try #require(bound == 0)
    if listening { try #require(listen(fd, 16) == 0) }
    return fd
}

@Suite("A passed listening socket")
struct PassedListenerTests {
    @Test("a listening TCP socket is taken, close-on-exec and non-blocking")
    func listeningTCP() throws {
        let fd = try tcpSocket(listening: true)
        let socket = try Socket(passedListener: fd, name: "webpush")
        #expect(socket.fileDescriptor == fd)
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0)
        #expect(socket.localAddress?.ipText == "127.0.0.1")
        // Nothing pending: an accept does not block.
        #expect(try socket.accept() == nil)
    }

    @Test("a socket that is not a listening TCP stream is refused, naming it")
    func notAListener() throws {
        let bound = try tcpSocket(listening: false)
        defer { close(bound) }
        #expect(throws: SocketActivationError("socket \(bound) (`webpush`): not listening (a connection, as Accept=yes passes; the relay needs Accept=no)")) {
            try Socket(passedListener: bound, name: "webpush")
        }
        let datagram = try tcpSocket(type: Int32(SOCK_DGRAM.rawValue), listening: false)
        defer { close(datagram) }
        #expect(throws: SocketActivationError("socket \(datagram) (`api`): not a stream socket (ListenStream= in its .socket unit)")) {
            try Socket(passedListener: datagram, name: "api")
        }
        let unix = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(unix) }
        #expect(throws: SocketActivationError("socket \(unix) (`api`): not a TCP socket; the relay listens on TCP only (ListenStream=[ADDRESS:]PORT)")) {
            try Socket(passedListener: unix, name: "api")
        }
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        #expect(throws: SocketActivationError("socket \(pipeEnds[0]) (`metrics`): not a socket")) {
            try Socket(passedListener: pipeEnds[0], name: "metrics")
        }
        // A number at the descriptor limit is never open: a closed
        // socket's number could be reused at once by a test running beside.
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let closed = Int32(clamping: limit.rlim_cur)
        #expect(throws: SocketActivationError("socket \(closed) (`webpush`): not an open descriptor (LISTEN_FDS counts more sockets than were passed)")) {
            try Socket(passedListener: closed, name: "webpush")
        }
    }

    @Test("a duplicate is its own descriptor for the same socket: closing one leaves the other accepting")
    func duplicate() throws {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        let copy = try listener.duplicate()
        #expect(copy.fileDescriptor != listener.fileDescriptor)
        #expect(fcntl(copy.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        listener.close()
        let client = try Socket.connect(to: #require(SocketAddress(ip: "127.0.0.1", port: copy.localPort))).socket
        _ = client
        var accepted: Socket?
        for _ in 0..<100 where accepted == nil {
            accepted = try copy.accept()
            if accepted == nil { usleep(10_000) }
        }
        #expect(accepted != nil)
    }
}
