import EventLoop
import Glibc
import TestSupport
import Testing

@Suite("Socket")
struct SocketTests {
    @Test("address literals parse and print", arguments: [
        ("127.0.0.1", 80, "127.0.0.1:80"),
        ("0.0.0.0", 0, "0.0.0.0:0"),
        ("::1", 443, "[::1]:443"),
        ("[::1]", 443, "[::1]:443"),
        ("::", 8080, "[::]:8080"),
        ("2001:db8::1", 1, "[2001:db8::1]:1"),
        ("::ffff:10.0.0.1", 2, "[::ffff:10.0.0.1]:2"),
    ])
    func addressLiterals(text: String, port: Int, expected: String) throws {
        let address = try #require(SocketAddress(ip: text, port: UInt16(port)))
        #expect(address.description == expected)
        #expect(address.port == UInt16(port))
    }

    @Test("non-literals are not addresses", arguments: [
        "", "localhost", "1.2.3", "256.1.1.1", "::1::2", "[::1", "1.2.3.4 ", "fe80::1%lo", "a\u{0}b",
    ])
    func notAddresses(text: String) {
        #expect(SocketAddress(ip: text, port: 1) == nil)
    }

    @Test("listens on IPv4 and IPv6 literals with port 0 and reports the bound port", arguments: [
        "127.0.0.1", "::1", "0.0.0.0", "::",
    ])
    func listensOnPortZero(host: String) throws {
        let listener = try Socket.listen(host: host, port: 0)
        #expect(listener.localPort != 0)
        #expect(listener.localAddress?.family == (host.contains(":") ? .ipv6 : .ipv4))
    }

    @Test("listening on :: serves IPv4 too, whatever net.ipv6.bindv6only says")
    func wildcardIsDualStack() throws {
        let listener = try Socket.listen(host: "::", port: 0)
        var v6only: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(listener.fileDescriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, &length) == 0)
        #expect(v6only == 0)
        let target = try #require(SocketAddress(ip: "127.0.0.1", port: listener.localPort))
        let (client, _) = try Socket.connect(to: target)
        var accepted: Socket?
        for _ in 0..<200 where accepted == nil {
            accepted = try listener.accept()
            if accepted == nil { usleep(5_000) }
        }
        #expect(accepted != nil, "an IPv4 client reached the :: listener")
        _ = client
    }

    @Test("listening on a host name is a typed error, not a lookup")
    func listenRejectsNames() {
        #expect(throws: SocketError(.address, errno: EINVAL)) {
            try Socket.listen(host: "localhost", port: 0)
        }
    }

    @Test("SO_REUSEPORT lets two listeners share a port; without it the second fails")
    func reusePort() throws {
        let first = try Socket.listen(host: "127.0.0.1", port: 0, reusePort: true)
        let second = try Socket.listen(host: "127.0.0.1", port: first.localPort, reusePort: true)
        #expect(second.localPort == first.localPort)
        #expect(throws: SocketError(.bind, errno: EADDRINUSE)) {
            try Socket.listen(host: "127.0.0.1", port: first.localPort, reusePort: false)
        }
    }

    @Test("accept returns nil when nothing is pending")
    func acceptNothingPending() throws {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        #expect(try listener.accept() == nil)
    }

    @Test("accept hands back a connection with addresses, and end-of-file after shutdownWrite")
    func acceptAndShutdown() async throws {
        let result = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<(local: String, peer: String, clientPeer: String, eof: Bool)>) in
                let listener = try Socket.listen(host: "127.0.0.1", port: 0)
                let address = try #require(SocketAddress(ip: "127.0.0.1", port: listener.localPort))
                let (client, _) = try Socket.connect(to: address)
                final class Waiter: IOHandler {
                    let action: () -> Void
                    init(_ action: @escaping () -> Void) { self.action = action }
                    func handleIO(_ events: IOEvents) { action() }
                }
                try loop.register(listener.fileDescriptor, interest: .readable, handler: Waiter {
                    guard let server = try? listener.accept() else { return }
                    loop.deregister(listener.fileDescriptor)
                    try? client.shutdownWrite()
                    var byte: UInt8 = 0
                    // Poll until the FIN arrives (bounded by the test timeout).
                    func poll() {
                        switch withUnsafeMutableBytes(of: &byte, { server.read(into: $0) }) {
                        case .wouldBlock: loop.schedule(after: .milliseconds(1), poll)
                        case let other:
                            promise.succeed((server.localAddress?.description ?? "", server.peerAddress?.description ?? "",
                                             client.peerAddress?.description ?? "", other == .endOfFile))
                        }
                    }
                    poll()
                })
            }
        }
        #expect(result.local.hasPrefix("127.0.0.1:"))
        #expect(result.peer.hasPrefix("127.0.0.1:"))
        #expect(result.clientPeer == result.local)
        #expect(result.eof)
    }

    @Test("connecting to a closed port reports ECONNREFUSED through pendingConnectError")
    func connectRefused() async throws {
        let error = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<SocketError?>) in
                // Bound but not listening: the port is ours and refuses.
                let holder = try Socket.bound(to: #require(SocketAddress(ip: "127.0.0.1", port: 0)))
                let target = try #require(SocketAddress(ip: "127.0.0.1", port: holder.localPort))
                let (socket, progress) = try Socket.connect(to: target)
                #expect(progress == .inProgress)
                final class Waiter: IOHandler {
                    let action: () -> Void
                    init(_ action: @escaping () -> Void) { self.action = action }
                    func handleIO(_ events: IOEvents) { action() }
                }
                try loop.register(socket.fileDescriptor, interest: .writable, handler: Waiter {
                    loop.deregister(socket.fileDescriptor)
                    _ = holder
                    promise.succeed(socket.pendingConnectError())
                })
            }
        }
        #expect(error == SocketError(.connect, errno: ECONNREFUSED))
    }

    @Test("writing to a closed peer fails with EPIPE or ECONNRESET instead of raising SIGPIPE")
    func writeToClosedPeer() throws {
        let (socket, peer) = try makeSocketPair()
        peer.close()
        let result = [UInt8](repeating: 7, count: 100).withUnsafeBytes { socket.write($0) }
        #expect(result == .failed(EPIPE) || result == .failed(ECONNRESET))
        #expect(socket.isOpen)
        socket.close()
        socket.close()
        #expect(!socket.isOpen)
    }

    @Test("socket options apply", arguments: [true, false])
    func options(enabled: Bool) throws {
        let (socket, _) = try Socket.connect(to: #require(SocketAddress(ip: "127.0.0.1", port: 9)))
        try socket.setNoDelay(enabled)
        try socket.setKeepAlive(enabled, idleSeconds: 30, intervalSeconds: 5, probeCount: 3)
        try socket.setSendBufferSize(64 * 1024)
        try socket.setReceiveBufferSize(64 * 1024)
        var value: Int32 = -1
        var length = socklen_t(4)
        getsockopt(socket.fileDescriptor, SOL_SOCKET, SO_KEEPALIVE, &value, &length)
        #expect((value != 0) == enabled)
    }

    @Test("echo over loopback moves 4 MiB both ways through EAGAIN and back-pressure")
    func echoWithBackPressure() async throws {
        let payload = patternBytes(count: 4 * 1024 * 1024, seed: 42)
        let outcome = try await withLoopThread { loop in
            try await onLoop(loop, timeout: .seconds(60)) { (promise: Promise<(equal: Bool, wouldBlocks: Int, accepted: Int, pauses: Int)>) in
                let listener = try Socket.listen(host: "127.0.0.1", port: 0)
                let server = try EchoServer(loop: loop, listener: listener, highWater: 16 * 1024, sendBufferSize: 16 * 1024)
                let address = try #require(SocketAddress(ip: "127.0.0.1", port: listener.localPort))
                let client = try StreamingClient(loop: loop, address: address, payload: payload) { client in
                    promise.succeed((client.received == payload, client.wouldBlocks, server.accepted, server.pauses))
                    server.shutdown()
                }
                _ = client
            }
        }
        #expect(outcome.equal)
        #expect(outcome.wouldBlocks > 0)
        #expect(outcome.accepted == 1)
        #expect(outcome.pauses > 0)
    }

    @Test("one loop accepts and echoes 2,000 simultaneous loopback connections")
    func twoThousandConnections() async throws {
        let limit = try raiseFileDescriptorLimit()
        try #require(limit >= 4_500, "RLIMIT_NOFILE \(limit) is too low for 2,000 connection pairs")
        let connections = 2_000
        let outcome = try await withLoopThread { loop in
            try await onLoop(loop, timeout: .seconds(60)) { (promise: Promise<(echoed: Int, failed: Int, accepted: Int)>) in
                let listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 4096)
                let server = try EchoServer(loop: loop, listener: listener)
                let address = try #require(SocketAddress(ip: "127.0.0.1", port: listener.localPort))
                let tally = Recorder<Int>()
                tally.items = [0, 0]  // echoed, failed
                var clients: [StreamingClient] = []
                for index in 0..<connections {
                    let message = Array("connection \(index) says hello".utf8)
                    let client = try StreamingClient(loop: loop, address: address, payload: message) { client in
                        if client.received == message { tally.items[0] += 1 } else { tally.items[1] += 1 }
                        if tally.items[0] + tally.items[1] == connections {
                            promise.succeed((tally.items[0], tally.items[1], server.accepted))
                            server.shutdown()
                        }
                    }
                    clients.append(client)
                }
                // Everything is registered; the clients are kept alive by the loop.
                #expect(loop.registeredCount >= connections)
            }
        }
        #expect(outcome.echoed == connections)
        #expect(outcome.failed == 0)
        #expect(outcome.accepted == connections)
    }
}

/// Connects, writes `payload` (as fast as the socket takes it), reads the echo
/// back until as many bytes came back, then closes and calls `done`.
final class StreamingClient: IOHandler {
    let loop: EventLoop
    let socket: Socket
    let payload: [UInt8]
    private(set) var received: [UInt8] = []
    private(set) var wouldBlocks = 0
    private var sent = 0
    private var connected = false
    private var finished = false
    private let done: (StreamingClient) -> Void
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    init(loop: EventLoop, address: SocketAddress, payload: [UInt8], done: @escaping (StreamingClient) -> Void) throws {
        self.loop = loop
        self.payload = payload
        self.done = done
        let (socket, progress) = try Socket.connect(to: address)
        self.socket = socket
        connected = progress == .connected
        // Small buffers make EAGAIN certain for large payloads.
        try socket.setSendBufferSize(32 * 1024)
        try socket.setReceiveBufferSize(32 * 1024)
        received.reserveCapacity(payload.count)
        try loop.register(socket.fileDescriptor, interest: [.readable, .writable], handler: self)
    }

    func handleIO(_ events: IOEvents) {
        guard !finished else { return }
        if !connected {
            guard events.contains(.writable) || events.contains(.error) else { return }
            if socket.pendingConnectError() != nil { return finish() }
            connected = true
        }
        // Write until the socket refuses (EAGAIN), as a real sender does.
        writing: while events.contains(.writable) && sent < payload.count {
            let result = payload.withUnsafeBytes { socket.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
            switch result {
            case .bytes(let count): sent += count
            case .wouldBlock:
                wouldBlocks += 1
                break writing
            case .failed: return finish()
            }
            if sent == payload.count { loop.setInterest(socket.fileDescriptor, .readable) }
        }
        if events.contains(.readable) || events.contains(.hangup) {
            let result = scratch.withUnsafeMutableBytes { socket.read(into: $0) }
            switch result {
            case .bytes(let count):
                received.append(contentsOf: scratch[0..<count])
                if received.count >= payload.count { return finish() }
            case .wouldBlock: break
            case .endOfFile, .failed: return finish()
            }
        }
    }

    private func finish() {
        finished = true
        loop.deregister(socket.fileDescriptor)
        socket.close()
        done(self)
    }
}
