import Delivery
import EventLoop
import Foundation
import Glibc
import RelayCore
import Testing
import APNs
import APNsCore
import APNsEmulator
import HTTP1
import HTTPCore
import TestSupport

@testable import Relay

@Suite("The Web Push listener over sockets", .timeLimit(.minutes(1)))
struct WebPushListenerTests {
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

    @Test("shutdown: no new connections, a request in flight gets its real answer, then all closes")
    func gracefulShutdown() throws {
        let fixture = try ServerFixture(delay: .seconds(1))
        defer { fixture.stop() }
        let busy = try TestClient(port: fixture.port)
        let idle = try TestClient(port: fixture.port)
        try idle.send("GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        try busy.send(webPushBytes())
        // Let the request reach the fake APNs before shutting down (polled
        // with a blocking sleep: other tests may hold the task pool).
        for _ in 0..<400 where fixture.deliveries.inFlight == 0 { usleep(5000) }
        #expect(fixture.deliveries.inFlight == 1)
        fixture.server.beginShutdown()
        #expect(try idle.readsEOF())
        let response = try busy.readResponse()
        #expect(response.status == 201)
        #expect(response.header("Connection") == "close")
        #expect(fixture.waitUntilDrained())
        #expect(throws: (any Error).self) { try TestClient(port: fixture.port) }
    }
}

@Suite("The Web Push listener with the real APNs client and emulator", .timeLimit(.minutes(1)))
struct WebPushListenerAPNsTests {
    /// The relay over the real APNs client, against the in-process emulator
    /// (client-certificate auth, throwaway CA).
    final class Stack {
        let emulator: APNsEmulator
        let group: EventLoopGroup
        let server: HTTP1Listener<WebPushHandler>
        let port: UInt16
        let log = CapturedLog()

        init() throws {
            emulator = try APNsEmulator(configuration: APNsEmulatorConfiguration(
                certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                privateKeyFile: TestCertificates.path(TestCertificates.serverKey),
                authentication: .clientCertificate(caFile: TestCertificates.path(TestCertificates.caCertificate)),
                recordNotifications: true))
            try emulator.start()
            var configuration = Configuration()
            configuration.p12File = try TestCertificates.path(TestCertificates.clientP12)
            configuration.p12Password = TestCertificates.p12Password
            configuration.caFile = try TestCertificates.path(TestCertificates.caCertificate)
            let credential = try loadCredential(configuration.credentialSpec, now: WebPushHandler.unixTime())
            let topic = configuration.effectiveTopic(certificateUID: credential.certificateUID)
            let catalog = APNsCredentialCatalog(caFile: configuration.caFile)
            catalog.add(.primary, credential.authentication)
            var settings = APNsSettings()
            settings.productionHost = HostAndPort(host: "127.0.0.1", port: emulator.port)
            settings.developmentHost = settings.productionHost
            settings.answerTimeout = .seconds(1)
            let clientConfiguration = APNsClientConfiguration(settings, credentials: catalog)
            group = try EventLoopGroup(count: 2, namePrefix: "stack")
            let logger = log.logger
            let loopContexts = LoopContexts(loops: group.loops) { loop in
                LoopContext(sender: APNsClient(loop: loop, configuration: clientConfiguration),
                            apps: RelayApps(defaultApp: RelayApp(topic: topic)), logger: logger, loop: loop)
            }
            server = HTTP1Listener(options: ListenerOptions(bindAddress: "127.0.0.1", port: 0), loops: group.loops,
                                   tlsContext: nil, loopContexts: loopContexts, logger: logger,
                                   deliveries: InFlightDeliveries(maxInFlight: 1000), feedback: unwatchedFeedback())
            port = try server.start()
        }

        func stop() {
            server.beginShutdown()
            server.closeAllConnections()
            group.stopAndJoin()
            emulator.stop()
        }
    }

    @Test("a Web Push reaches the emulator with the headers and payload of WIRE.md §2")
    func delivers() throws {
        let stack = try Stack()
        defer { stack.stop() }
        let client = try TestClient(port: stack.port)
        try client.send(webPushBytes(path: "/relay-to/development/\(testToken)/account%2F7"))
        let response = try client.readResponse()
        #expect(response.status == 201)
        let received = try #require(stack.emulator.receivedNotifications().first)
        #expect(response.header("Location") == "/relay-to/message/" + received.apnsID)
        #expect(received.deviceToken == testToken)
        #expect(received.topic == TestCertificates.bundleID)
        #expect(received.payloadText.contains(#""x":"account/7""#))
    }

    @Test("emulator faults map to the relay's statuses", arguments: [
        (UInt8(0x01), 410), (0x02, 410), (0x04, 502), (0x05, 503), (0x06, 502), (0x07, 502), (0x0c, 503),
        (0x0e, 504), (0x0f, 502),
    ])
    func faults(code: UInt8, status: Int) throws {
        let stack = try Stack()
        defer { stack.stop() }
        let client = try TestClient(port: stack.port)
        try client.send(webPushBytes(path: "/relay-to/production/" + APNsFaultToken.token(code: code)))
        #expect(try client.readResponse().status == status)
    }
}
