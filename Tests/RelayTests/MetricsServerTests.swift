import Testing
@testable import Relay

@Suite("Metrics listener answers")
struct MetricsServerTests {
    static func answer(_ head: String) -> String {
        String(decoding: MetricsServer.response(toHead: Array(head.utf8), exposition: { Array("m 1\n".utf8) }),
               as: UTF8.self)
    }

    @Test("GET /metrics: the exposition, format 0.0.4", arguments: [
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "GET /metrics?x=1 HTTP/1.0\r\n\r\n",
    ])
    func metrics(head: String) {
        let text = Self.answer(head)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(text.contains("Content-Length: 4\r\n"))
        #expect(text.hasSuffix("\r\n\r\nm 1\n"))
    }

    @Test("other requests", arguments: [
        ("GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 "), ("POST /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 405 "),
        ("GET /metrics\r\n\r\n", "HTTP/1.1 400 "), ("\r\n\r\n", "HTTP/1.1 400 "),
        ("HEAD /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 200 "),
    ])
    func others(head: String, status: String) {
        let text = Self.answer(head)
        #expect(text.hasPrefix(status))
        if head.hasPrefix("HEAD") { #expect(text.hasSuffix("\r\n\r\n")) }
    }
}
