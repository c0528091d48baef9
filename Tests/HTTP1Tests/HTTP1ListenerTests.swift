import EventLoop
import HTTP1
import TestSupport
import Testing

@Suite("HTTP/1 listener", .timeLimit(.minutes(1)))
struct HTTP1ListenerTests {
    @Test("beyond MAX_CONNECTIONS a connection is accepted and closed at once")
    func connectionCap() throws {
        let fixture = try ListenerFixture(threads: 1, status: 200, maxConnections: 2)
        defer { fixture.stop() }
        let first = try TestClient(port: fixture.port)
        let second = try TestClient(port: fixture.port)
        try first.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try first.readResponse().status == 200)
        try second.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try second.readResponse().status == 200)
        let third = try TestClient(port: fixture.port)
        #expect(try third.readsEOF())
        #expect(fixture.listener.counters.openConnections == 2)
    }

    @Test("connections spread over every loop, with and without SO_REUSEPORT", arguments: [true, false])
    func manyConnections(reusePort: Bool) throws {
        let fixture = try ListenerFixture(threads: 2, reusePort: reusePort)
        defer { fixture.stop() }
        var clients: [TestClient] = []
        for _ in 0..<50 { clients.append(try TestClient(port: fixture.port)) }
        for client in clients { try client.send(postBytes()) }
        for client in clients { #expect(try client.readResponse().status == 201) }
        #expect(fixture.record.all.count == 50)
    }

    @Test("a port in use is one clear error")
    func portInUse() throws {
        let fixture = try ListenerFixture(threads: 1, reusePort: false)
        defer { fixture.stop() }
        let group = try EventLoopGroup(count: 1, namePrefix: "second")
        defer { group.stopAndJoin() }
        let record = HandlerRecord()
        let second = HTTP1Listener(options: ListenerOptions(bindAddress: "127.0.0.1", port: fixture.port, reusePort: false),
                                   loops: group.loops, tlsContext: nil, warn: { _ in }) { loop in
            AnsweringHandler(loop: loop, status: 200, delay: .zero, record: record)
        }
        #expect(throws: HTTP1ListenerError.self) { try second.start() }
    }

    @Test("an unusable bind address is one clear error")
    func badBindAddress() throws {
        let group = try EventLoopGroup(count: 1, namePrefix: "bad")
        defer { group.stopAndJoin() }
        let record = HandlerRecord()
        let server = HTTP1Listener(options: ListenerOptions(bindAddress: "not-an-ip", port: 0),
                                   loops: group.loops, tlsContext: nil, warn: { _ in }) { loop in
            AnsweringHandler(loop: loop, status: 200, delay: .zero, record: record)
        }
        let error = #expect(throws: HTTP1ListenerError.self) { try server.start() }
        #expect(error?.description.contains("not-an-ip") == true)
    }
}
