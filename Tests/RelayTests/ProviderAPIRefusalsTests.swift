import AsyncPush
import Delivery
import APNs
import EventLoop
import Feedback
import Foundation
import HTTP1
import HTTPCore
import ProviderAPI
import Provisioning
import RelayCore
import TestSupport
import Testing
import XMLRPC

@testable import Relay

/// The refusals a connection makes before a request reaches its handler, in
/// the provider API's dialect: gorush's JSON (the Web Push port's plain
/// text is HTTP1's own, HTTP1Tests).
@Suite("Connection refusals in the provider API's dialect", .timeLimit(.minutes(1)))
struct ProviderAPIRefusalsTests {
    @Test("a machine given gorush's dialect refuses bad framing, limits and slow heads in JSON", arguments: [
        ("BROKEN\r\n\r\n", nil, 400),
        ("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Length: 99999\r\n\r\n", nil, 413),
        ("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 2000) + "\r\n\r\n", nil, 431),
        ("GET /healthz HTTP/1.1\r\n", HTTP1ConnectionMachine.TimerKind.header, 408),
    ])
    func machineRefusesInJSON(input: String, timer: HTTP1ConnectionMachine.TimerKind?, status: Int) throws {
        var machine = HTTP1ConnectionMachine(limits: HTTP1Limits(maxHeaderBytes: 1024, maxBodyBytes: 1024),
                                             timeouts: .init(), refusals: .gorushJSON)
        var actions: [HTTP1ConnectionMachine.Action] = []
        machine.start(into: &actions)
        Array(input.utf8).withUnsafeBytes { machine.bytesAvailable($0, into: &actions) }
        if let timer { machine.timerFired(timer, into: &actions) }
        let reason = try #require(actions.lazy.compactMap { action -> String? in
            if case .refused(status, let reason) = action { reason } else { nil }
        }.first)
        let sent = try #require(actions.lazy.compactMap { action -> [UInt8]? in
            if case .send(let bytes) = action { bytes } else { nil }
        }.first)
        let text = String(decoding: sent, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 \(status) "))
        #expect(text.contains("\r\nContent-Type: application/json; charset=utf-8\r\n"))
        #expect(text.contains("\r\nConnection: close\r\n"))
        let body = try #require(text.range(of: "\r\n\r\n")).upperBound
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text[body...].utf8)) as? [String: Any])
        #expect(object["code"] as? Int == status)
        #expect(object["message"] as? String == reason)
    }

    @Test("the API port answers its connection's refusals as gorush's JSON and sends nothing to APNs", arguments: [
        ("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: 5000\r\n\r\n", 413),
        ("POST /api/push HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 3000))\r\n\r\n", 431),
        ("GET /healthz HTTP/1.1\r\n", 408),
    ])
    func apiPortRefusesInJSON(request: String, status: Int) throws {
        let fixture = try APIServerFixture()
        defer { fixture.stop() }
        let (client, response) = try fixture.exchange(request)
        #expect(response.status == status)
        #expect(response.header("Content-Type") == "application/json; charset=utf-8")
        #expect(response.header("Connection") == "close")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any])
        #expect(object["code"] as? Int == status)
        #expect((object["message"] as? String)?.isEmpty == false)
        #expect(try client.readsEOF())
        #expect(fixture.recorder.all.isEmpty)
        #expect(fixture.log.eventuallyContains { $0.contains("status=\(status)") })
    }
}

/// A provider API listener on 127.0.0.1 (port 0) with a 1 KiB body limit,
/// 2 KiB of header and a 300 ms header timeout, sending to fake senders.
private final class APIServerFixture {
    let group: EventLoopGroup
    let server: HTTP1Listener<ProviderAPIHandler>
    let port: UInt16
    let recorder = SentRecorder()
    let log = CapturedLog()

    init() throws {
        group = try EventLoopGroup(count: 1, namePrefix: "api-test")
        let recorder = self.recorder
        let context = ProviderAPIContext(
            keyring: try APIKeyring([]), provisioned: ProvisionedApps(catalog: APNsCredentialCatalog(caFile: nil)),
            feedback: FeedbackSink(store: FeedbackStore(maxPerApp: 10), hook: nil),
            limits: ProviderLimits(maxBodyBytes: 1024, maxNotifications: 10, maxTokens: 10),
            xmlLimits: XMLRPCLimits(maxBodyBytes: 1024, maxDepth: 32, maxElements: 1000, maxStringBytes: 1024),
            provisionDirectory: nil, async: AsyncPushes(byDefault: false, maxTries: 5, maxPending: 100))
        let options = ListenerOptions(bindAddress: "127.0.0.1", port: 0, reusePort: true,
                                      limits: HTTP1Limits(maxHeaderBytes: 2048, maxBodyBytes: 1024),
                                      timeouts: .init(header: .milliseconds(300), body: .milliseconds(300),
                                                      keepAlive: .seconds(5)),
                                      maxConnections: 10)
        let logger = log.logger(level: .info)
        let deliveries = InFlightDeliveries(maxInFlight: 10)
        server = HTTP1Listener(options: options, loops: group.loops, tlsContext: nil,
                               warn: { logger.warning($0) }) { loop in
            ProviderAPIHandler(sender: FakeSender(loop: loop, onSend: { recorder.record($0) }),
                               apps: exampleApps(), context: context, counters: deliveries, logger: logger, loop: loop)
        }
        port = try server.start()
    }

    /// Sends `request` on a connection of its own: the connection and the answer.
    func exchange(_ request: String) throws -> (TestClient, TestClient.Response) {
        let client = try TestClient(port: port)
        try client.send(request)
        return (client, try client.readResponse())
    }

    func stop() {
        server.beginShutdown()
        server.closeAllConnections()
        group.stopAndJoin()
    }
}
