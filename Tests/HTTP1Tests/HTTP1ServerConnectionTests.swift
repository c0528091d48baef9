import EventLoop
import Foundation
import Glibc
import HTTPCore
import TestSupport
import Testing
import TLS

/// The connections' I/O over real sockets, with a handler that records and
/// answers (the Web Push handler over the same connections: RelayTests'
/// WebPushListenerTests).
@Suite("HTTP/1 server connections over sockets", .timeLimit(.minutes(1)))
struct HTTP1ServerConnectionTests {
    @Test("a keep-alive connection that goes idle after requests still closes at the idle timeout")
    func idleAfterRequestsCloses() throws {
        let fixture = try ListenerFixture(timeouts: .init(header: .milliseconds(300), body: .milliseconds(300),
                                                          keepAlive: .milliseconds(300)))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        // Each request moves the (lazy) timer: header, cancel, keep-alive.
        for _ in 0..<3 {
            try client.send(postBytes())
            #expect(try client.readResponse().status == 201)
        }
        let started = EventLoop.monotonicNanoseconds()
        #expect(try client.readsEOF())
        let waited = Double(EventLoop.monotonicNanoseconds() - started) / 1e9
        #expect(waited >= 0.2 && waited < 5)
    }

    @Test("100 requests on one keep-alive connection")
    func hundredOnOneConnection() throws {
        let fixture = try ListenerFixture()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        for _ in 0..<100 {
            try client.send(postBytes())
            #expect(try client.readResponse().status == 201)
        }
        #expect(fixture.record.all.count == 100)
        #expect(fixture.listener.counters.requestsAnswered == 100)
    }

    @Test("a body over the cap is refused with 413 while the sender is still sending")
    func oversizedBodyWhileSending() throws {
        let fixture = try ListenerFixture(limits: HTTP1Limits(maxHeaderBytes: 16384, maxBodyBytes: 8192))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        var body = "14000\r\n" + String(repeating: "z", count: 0x14000) + "\r\n0\r\n\r\n"
        body = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
        try? client.send(body)
        #expect(try client.readResponse().status == 413)
    }

    @Test("a slow head gets 408 and the connection closes; an idle keep-alive connection just closes")
    func timeouts() throws {
        let fixture = try ListenerFixture(status: 200, timeouts: .init(header: .milliseconds(200), body: .milliseconds(200),
                                                                       keepAlive: .milliseconds(300)))
        defer { fixture.stop() }
        let slow = try TestClient(port: fixture.port)
        try slow.send("GET /x HTTP/1.1\r\n")
        let response = try slow.readResponse()
        #expect(response.status == 408)
        #expect(try slow.readsEOF())

        let slowBody = try TestClient(port: fixture.port)
        try slowBody.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        #expect(try slowBody.readResponse().status == 408)

        let idle = try TestClient(port: fixture.port)
        try idle.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        #expect(try idle.readsEOF())
    }

    @Test("a sender that half-closes after its request still gets the answer")
    func halfClose() throws {
        let fixture = try ListenerFixture(delay: .milliseconds(50))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(postBytes())
        client.shutdownWrite()
        let response = try client.readResponse()
        #expect(response.status == 201)
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEOF())
    }

    @Test("HTTPS: a handshake that never completes is closed at the header timeout, without a 408")
    func stalledHandshake() throws {
        let identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                                           privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let context = try TLSContext.server(identity: identity, alpn: ["http/1.1"], clientCAFile: nil)
        let fixture = try ListenerFixture(timeouts: .init(header: .milliseconds(200)), tlsContext: context)
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send([0x16, 0x03, 0x01])  // the start of a ClientHello, then nothing
        #expect(try client.readsEOF())
    }

    @Test("HTTPS: the handshake is non-blocking and requests flow over TLS")
    func https() throws {
        let identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                                           privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let context = try TLSContext.server(identity: identity, alpn: ["http/1.1"], clientCAFile: nil)
        let fixture = try ListenerFixture(tlsContext: context)
        defer { fixture.stop() }
        let ca = try TestCertificates.path(TestCertificates.caCertificate)
        let url = "https://127.0.0.1:\(fixture.port)/x"
        let result = try Subprocess.run([
            "curl", "-sS", "--max-time", "10", "--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}",
            "--data-binary", String(repeating: "q", count: 50), url, url,
        ])
        #expect(result.status == 0, "\(result.standardErrorText)")
        #expect(result.standardOutputText == "201201")
        #expect(fixture.record.all.count == 2)
    }
}
