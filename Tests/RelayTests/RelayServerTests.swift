import EventLoop
import Foundation
import Glibc
import RelayCore
import Testing
import APNs
import APNsEmulator
import HTTP1
import TestSupport

@testable import Relay

@Suite("Relay server", .timeLimit(.minutes(1)))
struct RelayServerTests {
    @Test("beyond MAX_CONNECTIONS a connection is accepted and closed at once")
    func connectionCap() throws {
        let fixture = try ServerFixture(threads: 1, maxConnections: 2)
        defer { fixture.stop() }
        let first = try TestClient(port: fixture.port)
        let second = try TestClient(port: fixture.port)
        try first.send("GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try first.readResponse().status == 200)
        try second.send("GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try second.readResponse().status == 200)
        let third = try TestClient(port: fixture.port)
        #expect(try third.readsEOF())
        #expect(fixture.server.counters.openConnections == 2)
    }

    @Test("connections spread over every loop, with and without SO_REUSEPORT", arguments: [true, false])
    func manyConnections(reusePort: Bool) throws {
        let fixture = try ServerFixture(threads: 2, reusePort: reusePort)
        defer { fixture.stop() }
        var clients: [TestClient] = []
        for _ in 0..<50 { clients.append(try TestClient(port: fixture.port)) }
        for client in clients { try client.send(webPushBytes()) }
        for client in clients { #expect(try client.readResponse().status == 201) }
        #expect(fixture.recorder.all.count == 50)
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

    @Test("a port in use is one clear error")
    func portInUse() throws {
        let fixture = try ServerFixture(threads: 1, reusePort: false)
        defer { fixture.stop() }
        let group = try EventLoopGroup(count: 1, namePrefix: "second")
        defer { group.stopAndJoin() }
        let second = HTTP1Listener(options: ListenerOptions(bindAddress: "127.0.0.1", port: fixture.port, reusePort: false),
                                 loops: group.loops, tlsContext: nil, apps: exampleApps(), logger: CapturedLog().logger,
                                 deliveries: InFlightDeliveries(maxInFlight: 10)) { _ in
            FakeSender()
        }
        #expect(throws: HTTP1ListenerError.self) { try second.start() }
    }

    @Test("an unusable bind address is one clear error")
    func badBindAddress() throws {
        let group = try EventLoopGroup(count: 1, namePrefix: "bad")
        defer { group.stopAndJoin() }
        let server = HTTP1Listener(options: ListenerOptions(bindAddress: "not-an-ip", port: 0),
                                 loops: group.loops, tlsContext: nil, apps: exampleApps(), logger: CapturedLog().logger,
                                 deliveries: InFlightDeliveries(maxInFlight: 10)) { _ in
            FakeSender()
        }
        let error = #expect(throws: HTTP1ListenerError.self) { try server.start() }
        #expect(error?.description.contains("not-an-ip") == true)
    }
}

@Suite("Relay server with the real APNs client and emulator", .timeLimit(.minutes(1)))
struct RelayServerAPNsTests {
    /// The relay over the real APNs client, against the in-process emulator
    /// (client-certificate auth, throwaway CA).
    final class Stack {
        let emulator: APNsEmulator
        let group: EventLoopGroup
        let server: HTTP1Listener<RelayHandler>
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
            configuration.productionHost = HostAndPort(host: "127.0.0.1", port: emulator.port)
            configuration.developmentHost = configuration.productionHost
            configuration.apnsAnswerTimeout = .seconds(1)
            let credentials = try loadCredentials(configuration, now: RelayHandler.unixTime())
            let clientConfiguration = APNsClientConfiguration(
                configuration, tlsContext: try credentials.makeTLSContext(caFile: configuration.caFile),
                credentials: credentials)
            group = try EventLoopGroup(count: 2, namePrefix: "stack")
            server = HTTP1Listener(options: ListenerOptions(bindAddress: "127.0.0.1", port: 0), loops: group.loops,
                                 tlsContext: nil, apps: RelayApps(defaultApp: RelayApp(topic: credentials.topic)), logger: log.logger,
                                 deliveries: InFlightDeliveries(maxInFlight: 1000)) { loop in
                APNsClient(loop: loop, configuration: clientConfiguration)
            }
            port = try server.start()
        }

        func stop() {
            server.beginShutdown()
            server.closeAllConnections()
            group.stopAndJoin()
            emulator.stop()
        }
    }

    @Test("a Web Push reaches the emulator with the headers and payload of ARCHITECTURE.md §2")
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
        (UInt8(0x01), 410), (0x02, 410), (0x04, 413), (0x05, 429), (0x06, 502), (0x07, 502), (0x0c, 503),
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

@Suite("Listener options")
struct ListenerOptionsTests {
    @Test("the listener part of the configuration carries over (ARCHITECTURE.md §6)")
    func fromConfiguration() throws {
        let configuration = try Configuration(environment: [
            "PORT": "8443", "BIND": "::1", "MAX_HEADER_BYTES": "4096", "MAX_BODY_BYTES": "2048",
            "HEADER_TIMEOUT": "1.5", "BODY_TIMEOUT": "2", "KEEPALIVE_TIMEOUT": "30", "MAX_CONNECTIONS": "10",
            "MAX_IN_FLIGHT": "20", "REUSE_PORT": "0",
        ])
        let options = ListenerOptions(configuration: configuration)
        #expect(options.port == 8443)
        #expect(options.bindAddress == "::1")
        #expect(!options.reusePort)
        #expect(options.limits == HTTP1Limits(maxHeaderBytes: 4096, maxBodyBytes: 2048))
        #expect(options.timeouts == .init(header: .milliseconds(1500), body: .seconds(2), keepAlive: .seconds(30)))
        #expect(options.maxConnections == 10)
        // MAX_IN_FLIGHT is no listener option: the daemon gives it to the
        // handlers' InFlightDeliveries.
        #expect(configuration.maxInFlight == 20)
    }

    @Test("defaults are ARCHITECTURE.md §6's")
    func defaults() {
        let configuration = Configuration()
        let options = ListenerOptions(configuration: configuration)
        #expect(options.port == 42069)
        #expect(options.bindAddress == nil)
        #expect(options.reusePort)
        #expect(options.limits == HTTP1Limits(maxHeaderBytes: 16384, maxBodyBytes: 8192))
        #expect(options.timeouts == .init(header: .seconds(10), body: .seconds(10), keepAlive: .seconds(75)))
        #expect(options.maxConnections == 16_384)
        #expect(configuration.maxInFlight == 20_000)
    }
}
