import EventLoop
import HTTP1
import HTTPCore
import TestSupport
import Testing

@testable import Observability

@Suite("Metrics listener answers")
struct MetricsHandlerTests {
    /// What a metrics connection sends back for `head`: the head through the
    /// connection machine with the metrics handler's refusals, and its
    /// request, if it makes one, through the handler.
    static func answer(_ head: String) -> String {
        let handler = MetricsHandler { Array("m 1\n".utf8) }
        var machine = HTTP1ConnectionMachine(limits: HTTP1Limits(maxHeaderBytes: 8192, maxBodyBytes: 8192),
                                             timeouts: .init(), refusals: handler.refusals)
        var actions: [HTTP1ConnectionMachine.Action] = []
        machine.start(into: &actions)
        Array(head.utf8).withUnsafeBytes { machine.bytesAvailable($0, into: &actions) }
        var sent: [UInt8] = []
        var index = 0
        while index < actions.count {
            switch actions[index] {
            case .send(let bytes):
                sent += bytes
            case .dispatch(let request):
                if let response = handler.handle(request, completion: { _ in }) {
                    machine.responseReady(response, into: &actions)
                }
            case .consume, .armTimer, .cancelTimer, .close, .refused:
                break
            }
            index += 1
        }
        return String(decoding: sent, as: UTF8.self)
    }

    @Test("GET /metrics: the exposition, format 0.0.4", arguments: [
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "GET /metrics?x=1 HTTP/1.0\r\n\r\n",
    ])
    func metrics(head: String) {
        let text = Self.answer(head)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(text.contains("Content-Length: 4\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.hasSuffix("\r\n\r\nm 1\n"))
    }

    @Test("other requests", arguments: [
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 "), ("POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 "),
        ("GET /metrics\r\n\r\n", "HTTP/1.1 400 "), ("GET  /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 "),
        // HTTP/1.1 without Host: refused, as on every HTTP1 listener (RFC 9112 §3.2).
        ("GET /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "),
        // Empty lines before the request line are skipped (RFC 9112 §2.2).
        ("\r\n\r\nGET /metrics HTTP/1.0\r\n\r\n", "HTTP/1.1 200 "),
        ("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 "),
    ])
    func others(head: String, status: String) {
        let text = Self.answer(head)
        #expect(text.hasPrefix(status))
        #expect(text.contains("Connection: close\r\n"))
        if head.hasPrefix("HEAD") { #expect(text.hasSuffix("\r\n\r\n")) }
        if status.contains("405") { #expect(text.contains("Allow: GET, HEAD\r\n")) }
    }

    @Test("the listener on 127.0.0.1 answers one request per connection, then closes", .timeLimit(.minutes(1)))
    func overASocket() throws {
        let group = try EventLoopGroup(count: 1, namePrefix: "metrics-test")
        defer { group.stopAndJoin() }
        let listener = HTTP1Listener(metricsOn: "127.0.0.1", port: 0, loop: group.loops[0],
                                     logger: Logger(level: .warning) { _ in }) {
            Array("m 1\n".utf8)
        }
        let port = try listener.start()
        defer {
            listener.beginShutdown()
            listener.closeAllConnections()
        }
        let client = try TestClient(port: port)
        try client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("Connection") == "close")
        #expect(response.body == "m 1\n")
        #expect(try client.readsEOF())
    }

    @Test("a taken port is one clear error")
    func portInUse() throws {
        let group = try EventLoopGroup(count: 1, namePrefix: "metrics-test")
        defer { group.stopAndJoin() }
        let first = HTTP1Listener(metricsOn: "127.0.0.1", port: 0, loop: group.loops[0],
                                     logger: Logger(level: .warning) { _ in }) { [] }
        let port = try first.start()
        defer { first.beginShutdown() }
        let second = HTTP1Listener(metricsOn: "127.0.0.1", port: port, loop: group.loops[0],
                                     logger: Logger(level: .warning) { _ in }) { [] }
        let error = #expect(throws: HTTP1ListenerError.self) { try second.start() }
        #expect(error?.description.hasPrefix("cannot listen on 127.0.0.1 port \(port): ") == true)
    }
}
