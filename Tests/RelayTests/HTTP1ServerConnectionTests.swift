import EventLoop
import Foundation
import Glibc
import HTTP1
import RelayCore
import TestSupport
import Testing
import TLS

@testable import Relay

@Suite("HTTP/1 server connections over sockets", .timeLimit(.minutes(1)))
struct HTTP1ServerConnectionTests {
    @Test("a Web Push is relayed and answered 201 with Location and TTL")
    func relaysOne() throws {
        let fixture = try ServerFixture()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(webPushBytes())
        let response = try client.readResponse()
        #expect(response.status == 201)
        let notification = try #require(fixture.recorder.all.first)
        #expect(response.header("Location") == "/relay-to/message/" + notification.apnsID)
        #expect(response.header("TTL") == "172800")
        #expect(fixture.log.eventuallyContains { $0.contains("status=201 apns=200") })
    }

    @Test("a keep-alive connection that goes idle after requests still closes at the idle timeout")
    func idleAfterRequestsCloses() throws {
        let fixture = try ServerFixture(timeouts: .init(header: .milliseconds(300), body: .milliseconds(300),
                                                        keepAlive: .milliseconds(300)))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        // Each request moves the (lazy) timer: header, cancel, keep-alive.
        for _ in 0..<3 {
            try client.send(webPushBytes())
            #expect(try client.readResponse().status == 201)
        }
        let started = EventLoop.monotonicNanoseconds()
        #expect(try client.readsEOF())
        let waited = Double(EventLoop.monotonicNanoseconds() - started) / 1e9
        #expect(waited >= 0.2 && waited < 5)
    }

    @Test("100 requests on one keep-alive connection")
    func hundredOnOneConnection() throws {
        let fixture = try ServerFixture()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        for _ in 0..<100 {
            try client.send(webPushBytes())
            #expect(try client.readResponse().status == 201)
        }
        #expect(fixture.recorder.all.count == 100)
    }

    @Test("pipelined requests are answered in order")
    func pipelined() throws {
        // The first request waits longer for "APNs" than the ones behind it.
        let fixture = try ServerFixture(delay: .milliseconds(20))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        var batch: [UInt8] = []
        batch += webPushBytes()
        batch += Array("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        batch += Array("GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        batch += webPushBytes(path: "/relay-to/development/" + testToken)
        try client.send(batch)
        #expect(try client.readResponse().status == 201)
        #expect(try client.readResponse().status == 404)
        let health = try client.readResponse()
        #expect(health.status == 200)
        #expect(health.body == "OK")
        #expect(try client.readResponse().status == 201)
        #expect(fixture.recorder.all.map(\.environment) == [.production, .development])
    }

    @Test("chunked bodies, Expect: 100-continue, HTTP/1.0")
    func framings() throws {
        let fixture = try ServerFixture()
        defer { fixture.stop() }
        let body = [UInt8](repeating: 0xCD, count: 60)
        var chunkedHead = String(decoding: webPushBytes(body: []), as: UTF8.self)
        chunkedHead = chunkedHead.replacingOccurrences(of: "Content-Length: 0\r\n", with: "Transfer-Encoding: chunked\r\n")
        let client = try TestClient(port: fixture.port)
        try client.send(Array(chunkedHead.utf8) + Array("14\r\n".utf8) + Array(body[0..<20]) + Array("\r\n28\r\n".utf8)
                        + Array(body[20...]) + Array("\r\n0\r\n\r\n".utf8))
        #expect(try client.readResponse().status == 201)
        #expect(fixture.recorder.all.last?.payload.count ?? 0 > 60)

        // curl's way: the head with Expect, the body only after 100 Continue.
        var expectHead = String(decoding: webPushBytes(body: []), as: UTF8.self)
        expectHead = expectHead.replacingOccurrences(
            of: "Content-Length: 0\r\n", with: "Content-Length: \(body.count)\r\nExpect: 100-continue\r\n")
        try client.send(expectHead)
        let interim = try client.readResponse()
        #expect(interim.status == 100)
        try client.send(body)
        #expect(try client.readResponse().status == 201)

        let old = try TestClient(port: fixture.port)
        try old.send("GET /relay-to/_health HTTP/1.0\r\n\r\n")
        let response = try old.readResponse()
        #expect(response.status == 200)
        #expect(response.header("Connection") == "close")
        #expect(try old.readsEOF())
    }

    @Test("bad requests get their status; the connection stays usable where HTTP allows", arguments: [
        ("GET /relay-to/production/abc HTTP/1.1\r\nHost: x\r\n\r\n", 405, true),
        ("POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 404, true),
        ("POST /relay-to/production/\(testToken) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 415, true),
        ("POST /relay-to/production/\(testToken) HTTP/1.1\r\nHost: x\r\nContent-Encoding: aesgcm\r\nContent-Length: 0\r\n\r\n", 400, true),
        ("NOT HTTP\r\n\r\n", 400, false),
        ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 413, false),
        ("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 20000))\r\n\r\n", 431, false),
        ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400, false),
    ])
    func badRequests(request: String, status: Int, staysOpen: Bool) throws {
        let fixture = try ServerFixture()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(request)
        let response = try client.readResponse()
        #expect(response.status == status)
        #expect(response.body.hasSuffix("\n"))
        if staysOpen {
            try client.send("GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        } else {
            #expect(response.header("Connection") == "close")
            #expect(try client.readsEOF())
        }
        #expect(fixture.recorder.all.isEmpty)
        #expect(fixture.log.eventuallyContains { $0.contains("status=\(status)") })
    }

    @Test("a body over the cap is refused with 413 while the sender is still sending")
    func oversizedBodyWhileSending() throws {
        let fixture = try ServerFixture(limits: HTTP1Limits(maxHeaderBytes: 16384, maxBodyBytes: 8192))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        var body = "14000\r\n" + String(repeating: "z", count: 0x14000) + "\r\n0\r\n\r\n"
        body = "POST /relay-to/production/\(testToken) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
        try? client.send(body)
        #expect(try client.readResponse().status == 413)
    }

    @Test("a slow head gets 408 and the connection closes; an idle keep-alive connection just closes")
    func timeouts() throws {
        let fixture = try ServerFixture(timeouts: .init(header: .milliseconds(200), body: .milliseconds(200),
                                                         keepAlive: .milliseconds(300)))
        defer { fixture.stop() }
        let slow = try TestClient(port: fixture.port)
        try slow.send("GET /relay-to/_health HTTP/1.1\r\n")
        let response = try slow.readResponse()
        #expect(response.status == 408)
        #expect(try slow.readsEOF())

        let slowBody = try TestClient(port: fixture.port)
        try slowBody.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        #expect(try slowBody.readResponse().status == 408)

        let idle = try TestClient(port: fixture.port)
        try idle.send("GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        #expect(try idle.readsEOF())
    }

    @Test("a sender that half-closes after its request still gets the answer")
    func halfClose() throws {
        let fixture = try ServerFixture(delay: .milliseconds(50))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(webPushBytes())
        client.shutdownWrite()
        let response = try client.readResponse()
        #expect(response.status == 201)
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEOF())
    }

    @Test("a sender that resets before its answer: the connection is gone, the late answer goes nowhere")
    func resetBeforeAnswer() throws {
        let fixture = try ServerFixture(threads: 1, delay: .milliseconds(300))
        defer { fixture.stop() }
        let counters = fixture.server.counters
        let deliveries = fixture.deliveries
        func waitFor(_ condition: () -> Bool) -> Bool {
            for _ in 0..<500 where !condition() { usleep(10_000) }
            return condition()
        }
        do {
            let client = try TestClient(port: fixture.port)
            try client.send(webPushBytes())
            #expect(waitFor { deliveries.inFlight == 1 })
            // Close with a reset (SO_LINGER 0): the server sees an error, not EOF.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        // The connection closes (and is freed) while its answer is pending...
        #expect(waitFor { counters.openConnections == 0 })
        #expect(deliveries.inFlight == 1)
        // ...and the answer, when it comes, is logged and dropped.
        #expect(waitFor { deliveries.inFlight == 0 })
        #expect(fixture.log.eventuallyContains { $0.contains("status=201") })
        let next = try TestClient(port: fixture.port)
        try next.send(webPushBytes())
        #expect(try next.readResponse().status == 201)
    }

    @Test("HTTPS: a handshake that never completes is closed at the header timeout, without a 408")
    func stalledHandshake() throws {
        let identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                                           privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let context = try TLSContext.server(identity: identity, alpn: ["http/1.1"], clientCAFile: nil)
        let fixture = try ServerFixture(timeouts: .init(header: .milliseconds(200)), tlsContext: context)
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
        let fixture = try ServerFixture(tlsContext: context)
        defer { fixture.stop() }
        let ca = try TestCertificates.path(TestCertificates.caCertificate)
        let url = "https://127.0.0.1:\(fixture.port)/relay-to/production/\(testToken)"
        let result = try Subprocess.run([
            "curl", "-sS", "--max-time", "10", "--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}",
            "-H", "Content-Encoding: aesgcm", "-H", "TTL: 60", "-H", "Crypto-Key: dh=\(testDH)",
            "-H", "Encryption: salt=\(testSalt)", "--data-binary", String(repeating: "q", count: 50),
            url, url,
        ])
        #expect(result.status == 0, "\(result.standardErrorText)")
        #expect(result.standardOutputText == "201201")
        #expect(fixture.recorder.all.count == 2)
    }
}
