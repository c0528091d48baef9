import Testing

@testable import HTTPCore

/// The refusals a connection makes before a request reaches its handler, in
/// the listener's dialect: plain text by default, as on the Web Push port
/// (gorush's JSON on the provider API's is Relay's, RelayTests).
@Suite("Connection refusals in the listener's dialect")
struct HTTP1RefusalsTests {
    @Test("the Web Push dialect is today's plain text, byte for byte")
    func plainTextBytes() {
        let bytes = HTTP1Refusals.plainText.response(status: 413, reason: "body over 8 bytes").serialize(closing: true)
        #expect(String(decoding: bytes, as: UTF8.self) == "HTTP/1.1 413 Content Too Large\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 18\r\nConnection: close\r\n\r\n"
            + "body over 8 bytes\n")
    }
}
