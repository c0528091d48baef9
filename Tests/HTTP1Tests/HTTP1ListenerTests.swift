import Dispatch
import EventLoop
import Glibc
import HTTP1
import HTTPCore
import TestSupport
import Testing
import TLS

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

    @Test("on a socket another process made, every loop accepts", arguments: [0, 1])
    func passedSocketEveryLoopAccepts(blockedLoop: Int) throws {
        let socket = try Socket.listen(host: "127.0.0.1", port: 0)
        let fixture = try ListenerFixture(threads: 2, acceptingOn: socket)
        defer { fixture.stop() }
        // One loop busy: the other alone accepts and answers.
        let release = DispatchSemaphore(value: 0)
        fixture.group.loops[blockedLoop].execute { release.wait() }
        defer { release.signal() }
        for _ in 0..<5 {
            let client = try TestClient(port: fixture.port, timeoutSeconds: 5)
            try client.send(postBytes(connectionClose: true))
            #expect(try client.readResponse().status == 201)
        }
    }

    @Test("a stopped listener leaves the socket to the next, with the connections that queued meanwhile")
    func passedSocketOutlivesItsListener() throws {
        let socket = try Socket.listen(host: "127.0.0.1", port: 0)
        // The service manager's own descriptor, which keeps the socket open.
        let managers = try socket.duplicate()
        let first = try ListenerFixture(threads: 2, acceptingOn: socket)
        #expect(first.port == managers.localPort)
        let served = try TestClient(port: first.port)
        try served.send(postBytes())
        #expect(try served.readResponse().status == 201)
        // Accepted but silent until after the shutdown began: still answered.
        let early = try TestClient(port: first.port)
        try #require(eventually { first.listener.counters.openConnections == 2 })
        first.listener.beginShutdown()
        #expect(try served.readsEOF())
        try early.send(postBytes())
        let answer = try early.readResponse()
        #expect(answer.status == 201)
        #expect(answer.header("Connection") == "close")
        try #require(eventually { first.listener.isDrained })
        first.stop()

        // No process accepts now: the kernel queues the connection.
        let queued = try TestClient(port: managers.localPort)
        try queued.send(postBytes())
        let second = try ListenerFixture(threads: 2, acceptingOn: managers.duplicate())
        defer { second.stop() }
        #expect(try queued.readResponse().status == 201)
        #expect(first.record.all.count == 2 && second.record.all.count == 1)
    }

    @Test("a replaced TLS context is what the next handshakes get")
    func replacedTLSContext() throws {
        func context(_ certificate: String, _ key: String) throws -> TLSContext {
            let identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(certificate),
                                               privateKeyFile: TestCertificates.path(key))
            return try TLSContext.server(identity: identity, alpn: ["http/1.1"], clientCAFile: nil)
        }
        let fixture = try ListenerFixture(tlsContext: context(TestCertificates.serverCertificate, TestCertificates.serverKey))
        defer { fixture.stop() }
        func post(trusting ca: String) throws -> String {
            try Subprocess.run([
                "curl", "-sS", "--max-time", "10", "--cacert", TestCertificates.path(ca), "-o", "/dev/null",
                "-w", "%{http_code}", "--data-binary", "q", "https://127.0.0.1:\(fixture.port)/x",
            ]).standardOutputText
        }
        #expect(try post(trusting: TestCertificates.caCertificate) == "201")
        fixture.listener.replaceTLSContext(try context(TestCertificates.otherServerCertificate,
                                                       TestCertificates.otherServerKey))
        #expect(try post(trusting: TestCertificates.otherCACertificate) == "201")
        // curl prints 000 when the handshake fails: the old certificate is gone.
        #expect(try post(trusting: TestCertificates.caCertificate) == "000")
        #expect(fixture.record.all.count == 2)
    }

    @Test("over TLS, a request carries the SHA-256 of the client certificate that verified, nil without one")
    func clientCertificateFingerprint() throws {
        let identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                                           privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let context = try TLSContext.server(identity: identity, alpn: ["http/1.1"],
                                            clientCAFile: TestCertificates.path(TestCertificates.caCertificate),
                                            requireClientCertificate: false)
        let fixture = try ListenerFixture(threads: 1, tlsContext: context)
        defer { fixture.stop() }
        func post(_ certificate: [String]) throws -> String {
            try Subprocess.run(["curl", "-sS", "--max-time", "10", "--cacert",
                                TestCertificates.path(TestCertificates.caCertificate)] + certificate
                + ["-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "q", "https://127.0.0.1:\(fixture.port)/x"])
                .standardOutputText
        }
        #expect(try post(["--cert", TestCertificates.path(TestCertificates.clientCertificate),
                          "--key", TestCertificates.path(TestCertificates.clientKey)]) == "201")
        #expect(try post([]) == "201")
        let der = try Subprocess.run(["openssl", "x509", "-in", TestCertificates.path(TestCertificates.clientCertificate),
                                      "-outform", "DER"]).standardOutput
        let requests = fixture.record.all
        #expect(requests.count == 2)
        #expect(requests.first?.clientCertificateSHA256 == SHA256.hash(der))
        #expect(requests.last?.clientCertificateSHA256 == nil)
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
