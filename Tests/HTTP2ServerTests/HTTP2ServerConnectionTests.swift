import Glibc
import HTTP2
import HTTP2Server
import HTTPCore
import TestSupport
import Testing
import TLS

@Suite("HTTP/2 on an HTTP/1.1 listener", .timeLimit(.minutes(1)))
struct HTTP2ServerConnectionTests {
    @Test("h2c with prior knowledge: requests reach the handler as HTTP/1.1 requests, answers come back in any order")
    func priorKnowledge() throws {
        let fixture = try SwitchingListener()
        defer { fixture.stop() }
        let client = try SessionClient(port: fixture.port)
        let first = try client.request("/api/push?x=1", method: "POST", body: Array("{}".utf8))
        let second = try client.request("/healthz", headers: [HTTPField(name: "host", value: "named.test")])
        #expect(try client.exchange { client.closed[first] != nil && client.closed[second] != nil })
        #expect(client.maxConcurrentStreams == 100)
        #expect(client.statuses[first] == 201)
        #expect(client.bodies[first] == Array("/api/push?x=1".utf8))
        #expect(client.bodies[second] == Array("/healthz".utf8))
        let names = client.fields[first]?.map(\.name) ?? []
        #expect(!names.contains("connection"))
        #expect(client.fields[first]?.first { $0.name == "content-length" }?.value == "13")
        let requests = fixture.log.all.sorted { $0.target < $1.target }
        #expect(requests.map(\.target) == ["/api/push?x=1", "/healthz"])
        #expect(requests[0].headers["host"] == "relay.test")
        #expect(requests[0].body == Array("{}".utf8))
        #expect(requests[1].headers.values(for: "host") == ["named.test"])
        #expect(requests.allSatisfy { $0.clientCertificateSHA256 == nil })
        #expect(fixture.listener.counters.openConnections == 1)
        #expect(fixture.listener.counters.requestsAnswered == 2)
    }

    @Test("over TLS: ALPN h2 is HTTP/2, http/1.1 HTTP/1.1; either carries the client certificate's SHA-256")
    func alpn() throws {
        let identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                                           privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let context = try TLSContext.server(identity: identity, alpn: ["h2", "http/1.1"],
                                            clientCAFile: TestCertificates.path(TestCertificates.caCertificate),
                                            requireClientCertificate: false)
        let fixture = try SwitchingListener(tlsContext: context)
        defer { fixture.stop() }
        func get(_ version: String, _ path: String) throws -> String {
            try Subprocess.run(["curl", "-sS", "--max-time", "10", version, "--cacert",
                                TestCertificates.path(TestCertificates.caCertificate),
                                "--cert", TestCertificates.path(TestCertificates.clientCertificate),
                                "--key", TestCertificates.path(TestCertificates.clientKey),
                                "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                                "https://localhost:\(fixture.port)\(path)"]).standardOutputText
        }
        #expect(try get("--http2", "/two") == "201 2")
        #expect(try get("--http1.1", "/one") == "201 1.1")
        let der = try Subprocess.run(["openssl", "x509", "-in", TestCertificates.path(TestCertificates.clientCertificate),
                                      "-outform", "DER"]).standardOutput
        let requests = fixture.log.all
        #expect(requests.map(\.target) == ["/two", "/one"])
        #expect(requests.allSatisfy { $0.clientCertificateSHA256 == SHA256.hash(der) })
        #expect(requests.first?.headers["host"] == "localhost:\(fixture.port)")
    }

    @Test("HTTP/1.1 is still served on the same listener, a request line starting like the preface included")
    func http1Stays() throws {
        let fixture = try SwitchingListener()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 201)
        #expect(response.body == "/plain")
        let other = try TestClient(port: fixture.port)
        try other.send("PRI /x HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try other.readResponse().status != 0)
    }

    @Test("the preface in pieces still switches")
    func prefaceInPieces() throws {
        let fixture = try SwitchingListener()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        for byte in Frame.opening { try client.send([byte]) }
        try client.send(Frame.make(Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: 1, Frame.request()))
        let reader = FrameReader(client)
        let answer = reader.first { $0.type == Frame.headers && $0.stream == 1 }
        #expect(answer != nil)
    }

    @Test("shutdown: GOAWAY, the request in flight is answered, then the connection closes")
    func gracefulShutdown() throws {
        let fixture = try SwitchingListener(delay: .milliseconds(300))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(Frame.opening
            + Frame.make(Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: 1, Frame.request()))
        try #require(eventually { fixture.log.all.count == 1 })
        fixture.listener.beginShutdown()
        let frames = FrameReader(client).rest()
        let goAway = try #require(frames.firstIndex { $0.type == Frame.goAway })
        #expect(frames[goAway].errorCode == 0)
        #expect(UInt32(bytes: frames[goAway].payload[0..<4]) == 1)
        let answer = try #require(frames.firstIndex { $0.type == Frame.headers && $0.stream == 1 })
        #expect(answer > goAway)
        #expect(eventually { fixture.listener.isDrained })
    }

    @Test("rapid reset (CVE-2023-44487): streams opened and reset in a loop get GOAWAY ENHANCE_YOUR_CALM")
    func rapidReset() throws {
        let fixture = try SwitchingListener(delay: .seconds(5), http2: HTTP2ServerLimits(resetBurst: 20, resetsPerSecond: 1))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        var bytes = Frame.opening
        for index in 0..<50 {
            let stream = UInt32(2 * index + 1)
            bytes += Frame.make(Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: stream, Frame.request())
            bytes += Frame.make(Frame.rstStream, stream: stream, Frame.bigEndian(8))
        }
        try? client.send(bytes)
        let goAway = FrameReader(client).first { $0.type == Frame.goAway }
        #expect(goAway?.errorCode == 0xb)
        #expect(eventually { fixture.listener.isDrained })
    }

    @Test("hostile frames get GOAWAY with their error, and the listener serves on",
          arguments: [
              // HPACK that does not decode: an index beyond both tables (RFC 7541 §2.3.3).
              ("bad HPACK", Frame.make(Frame.headers, flags: Frame.endHeaders, stream: 1, [0xff, 0xff, 0xff, 0x7f]), UInt32(0x9)),
              // Beyond SETTINGS_MAX_FRAME_SIZE (16,384 by default, RFC 9113 §4.2).
              ("an oversized frame", Frame.make(Frame.data, stream: 1, Array(repeating: 0, count: 20_000)), UInt32(0x6)),
              // DATA belongs to a stream, never to the connection (RFC 9113 §6.1).
              ("DATA on stream 0", Frame.make(Frame.data, stream: 0, [1, 2, 3]), UInt32(0x1)),
          ])
    func hostileFrames(what: String, frames: [UInt8], errorCode: UInt32) throws {
        let fixture = try SwitchingListener()
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try? client.send(Frame.opening + frames)
        let goAway = FrameReader(client).first { $0.type == Frame.goAway }
        #expect(goAway?.errorCode == errorCode, "\(what)")
        #expect(eventually { fixture.listener.isDrained })
        let next = try SessionClient(port: fixture.port)
        let stream = try next.request("/after")
        #expect(try next.exchange { next.closed[stream] != nil })
        #expect(next.statuses[stream] == 201)
    }

    @Test("a header list over MAX_HEADER_BYTES resets its stream; the connection serves on")
    func headerListLimit() throws {
        let fixture = try SwitchingListener(limits: HTTP1Limits(maxHeaderBytes: 1024))
        defer { fixture.stop() }
        let client = try SessionClient(port: fixture.port)
        let big = try client.request("/big", headers: (0..<10).map { HTTPField(name: "x-filler-\($0)", value: String(repeating: "a", count: 120)) })
        let small = try client.request("/small")
        #expect(try client.exchange { client.closed[big] != nil && client.closed[small] != nil })
        #expect(client.statuses[big] == nil)
        #expect(client.statuses[small] == 201)
        #expect(fixture.log.all.map(\.target) == ["/small"])
    }

    @Test("a CONTINUATION flood (CVE-2024-27316) is bounded: the connection is closed, not grown")
    func continuationFlood() throws {
        let fixture = try SwitchingListener(limits: HTTP1Limits(maxHeaderBytes: 1024))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        var bytes = Frame.opening + Frame.make(Frame.headers, stream: 1, Frame.request())
        let filler = Frame.block([("x-filler", String(repeating: "b", count: 100))])
        for _ in 0..<2000 { bytes += Frame.make(Frame.continuation, stream: 1, filler) }
        try? client.send(bytes)
        // nghttp2 gives up after its CONTINUATION limit with a fatal error
        // (nothing more is sent on a session in that state): the relay drops
        // the connection at once, long before the receive timeout.
        let reader = FrameReader(client)
        _ = reader.rest()
        #expect(reader.sawEOF)
        #expect(fixture.log.all.isEmpty)
        #expect(eventually { fixture.listener.isDrained })
    }

    @Test("an idle connection gets GOAWAY and is closed after the keep-alive timeout")
    func idleTimeout() throws {
        let fixture = try SwitchingListener(timeouts: .init(header: .milliseconds(200), body: .milliseconds(200),
                                                            keepAlive: .milliseconds(300), lastCall: .milliseconds(100)))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(Frame.opening)
        let frames = FrameReader(client).rest()
        #expect(frames.last?.type == Frame.goAway)
        #expect(frames.last?.errorCode == 0)
    }

    @Test("a request never completed is dropped after the header and body timeouts")
    func slowRequest() throws {
        let fixture = try SwitchingListener(timeouts: .init(header: .milliseconds(200), body: .milliseconds(200),
                                                            keepAlive: .seconds(30), lastCall: .milliseconds(100)))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        try client.send(Frame.opening + Frame.make(Frame.headers, flags: Frame.endHeaders, stream: 1, Frame.request("POST")))
        let frames = FrameReader(client).rest()
        #expect(frames.last?.type == Frame.goAway)
        #expect(fixture.log.all.isEmpty)
    }

    @Test("a peer that never reads: output stays bounded and the connection closes after the body timeout")
    func peerNeverReads() throws {
        let fixture = try SwitchingListener(delay: .zero, limits: HTTP1Limits(maxBodyBytes: 1 << 16),
                                            timeouts: .init(header: .seconds(2), body: .milliseconds(500)),
                                            http2: HTTP2ServerLimits(outputHighWater: 16 * 1024))
        defer { fixture.stop() }
        let client = try TestClient(port: fixture.port)
        var small: Int32 = 1
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        // A long path, echoed back: many requests, each a big answer, none read.
        let path = "/" + String(repeating: "p", count: 4000)
        var bytes = Frame.opening + Frame.make(Frame.windowUpdate, Frame.bigEndian(1 << 30))
        for index in 0..<2000 {
            bytes += Frame.make(Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: UInt32(2 * index + 1),
                                Frame.block([(":method", "GET"), (":scheme", "http"), (":path", path)]))
        }
        // The server stops reading once its output backs up: our writes block too.
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try? client.send(bytes)
        #expect(eventually(timeout: .seconds(10)) { fixture.listener.isDrained })
        #expect(fixture.log.all.count < 2000)
    }

    @Test("connections that switched count against MAX_CONNECTIONS")
    func connectionCap() throws {
        let fixture = try SwitchingListener(maxConnections: 1)
        defer { fixture.stop() }
        let first = try SessionClient(port: fixture.port)
        let stream = try first.request("/one")
        #expect(try first.exchange { first.closed[stream] != nil })
        let second = try TestClient(port: fixture.port)
        #expect(try second.readsEOF())
        #expect(fixture.listener.counters.openConnections == 1)
    }
}
