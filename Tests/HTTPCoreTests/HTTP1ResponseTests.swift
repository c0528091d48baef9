import Testing
@testable import HTTPCore

struct HTTP1ResponseTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("writes status line, headers, Content-Length and body")
    func created() {
        let response = HTTP1Response(
            status: 201,
            headers: [HTTPField(name: "Location", value: "/relay-to/message/A"), HTTPField(name: "TTL", value: "60")])
        #expect(text(response.serialize(closing: false))
            == "HTTP/1.1 201 Created\r\nLocation: /relay-to/message/A\r\nTTL: 60\r\nContent-Length: 0\r\n\r\n")
    }

    @Test("adds Connection: close when closing")
    func closing() {
        let response = HTTP1Response(status: 400, body: "bad request line\n")
        #expect(text(response.serialize(closing: true))
            == "HTTP/1.1 400 Bad Request\r\nContent-Length: 17\r\nConnection: close\r\n\r\nbad request line\n")
    }

    @Test("tells an HTTP/1.0 keep-alive sender that the connection stays open")
    func http10KeepAlive() {
        let response = HTTP1Response(status: 200, body: "OK")
        #expect(text(response.serialize(closing: false, requestVersion: .http1_0))
            == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nOK")
        #expect(text(response.serialize(closing: true, requestVersion: .http1_0))
            == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK")
    }

    @Test("omits the body for HEAD but keeps its length")
    func head() {
        let response = HTTP1Response(status: 200, body: "OK")
        #expect(text(response.serialize(closing: false, includeBody: false))
            == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
    }

    @Test("writes no Content-Length for 204")
    func noContent() {
        #expect(text(HTTP1Response(status: 204).serialize(closing: false)) == "HTTP/1.1 204 No Content\r\n\r\n")
    }

    @Test("has the 100 Continue interim response")
    func continueResponse() {
        #expect(text(HTTP1Response.continue100) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test("has a reason phrase for every status the relay sends",
          arguments: [200, 201, 400, 404, 405, 408, 410, 413, 414, 415, 429, 431, 501, 502, 503, 504, 505])
    func reasonPhrases(status: Int) {
        #expect(HTTP1Response.reasonPhrase(for: status) != "Status")
    }

    @Test("writes decimal numbers", arguments: [0, 7, 10, 99, 100, 2_592_000, Int.max, -5, Int.min])
    func decimal(value: Int) {
        var output: [UInt8] = []
        appendDecimal(value, to: &output)
        #expect(text(output) == String(value))
    }
}
