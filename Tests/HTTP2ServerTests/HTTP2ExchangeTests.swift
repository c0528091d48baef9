import HTTP2
@testable import HTTP2Server
import HTTPCore
import Testing

@Suite("HTTP/2 exchange in HTTP/1.1 terms")
struct HTTP2ExchangeTests {
    private func request(authority: String?, headers: [(name: String, value: String)]) -> HTTP2Request {
        HTTP2Request(streamID: 1, method: "POST", path: "/3/device/abc?x=1", authority: authority, scheme: "https",
                     headers: headers, body: Array("{}".utf8))
    }

    @Test("the request: :path as the target, :authority as host unless a host field came")
    func requestFields() {
        let fingerprint: [UInt8] = Array(repeating: 7, count: 32)
        let converted = HTTP2Exchange.request(request(authority: "api.push.apple.com", headers: [("apns-topic", "t")]),
                                              clientCertificateSHA256: fingerprint)
        #expect(converted.method == "POST")
        #expect(converted.target == "/3/device/abc?x=1")
        #expect(converted.headers["host"] == "api.push.apple.com")
        #expect(converted.headers["apns-topic"] == "t")
        #expect(converted.body == Array("{}".utf8))
        #expect(converted.clientCertificateSHA256 == fingerprint)
        let withHost = HTTP2Exchange.request(request(authority: "a.example", headers: [("host", "b.example")]),
                                             clientCertificateSHA256: nil)
        #expect(withHost.headers.values(for: "host") == ["b.example"])
        #expect(withHost.clientCertificateSHA256 == nil)
        let neither = HTTP2Exchange.request(request(authority: nil, headers: []), clientCertificateSHA256: nil)
        #expect(neither.headers["host"] == nil)
    }

    @Test("the answer: connection-specific fields dropped (RFC 9113 §8.2.2), names lowercase, content-length of the body",
          arguments: [
              (200, [HTTPField(name: "Connection", value: "close"), HTTPField(name: "Keep-Alive", value: "timeout=5"),
                     HTTPField(name: "Transfer-Encoding", value: "chunked"), HTTPField(name: "Upgrade", value: "h2c"),
                     HTTPField(name: "Proxy-Connection", value: "x"), HTTPField(name: "Content-Type", value: "application/json"),
                     HTTPField(name: "apns-id", value: "id-1")],
               "{}", [("content-type", "application/json"), ("apns-id", "id-1"), ("content-length", "2")]),
              (204, [HTTPField(name: "Content-Length", value: "9")], "", []),
              (410, [], "gone", [("content-length", "4")]),
          ] as [(Int, [HTTPField], String, [(String, String)])])
    func responseFields(status: Int, headers: [HTTPField], body: String, expected: [(String, String)]) {
        let fields = HTTP2Exchange.responseFields(HTTP1Response(status: status, headers: headers, body: body))
        #expect(fields.map { "\($0.name): \($0.value)" } == expected.map { "\($0.0): \($0.1)" })
    }
}
