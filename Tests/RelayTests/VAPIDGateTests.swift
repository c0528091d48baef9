import Delivery
import EventLoop
import HTTPCore
import RelayCore
import TestSupport
import Testing

@testable import Relay

@Suite("The origin a restricted endpoint's VAPID aud must name")
struct VAPIDGateTests {
    static func request(_ headers: [(String, String)]) -> HTTP1Request {
        HTTP1Request(method: "POST", target: "/relay-to/production/x", version: .http1_1,
                     headers: HTTPHeaders(headers), body: [], keepAlive: true)
    }

    @Test("PUBLIC_URL wins; else the relay's TLS, else X-Forwarded-Proto, else http, with the Host as sent",
          arguments: [
              (String?.some("https://relay.example.com"), false, [("Host", "127.0.0.1:42069")], "https://relay.example.com"),
              (nil, false, [("Host", "relay.example.com:8443")], "http://relay.example.com:8443"),
              (nil, true, [("Host", "relay.example.com"), ("X-Forwarded-Proto", "http")], "https://relay.example.com"),
              (nil, false, [("Host", "relay.example.com:8443"), ("X-Forwarded-Proto", "https")], "https://relay.example.com:8443"),
              (nil, false, [("Host", "r.example"), ("X-Forwarded-Proto", " HTTPS , http")], "https://r.example"),
              (nil, false, [("Host", "r.example"), ("X-Forwarded-Proto", "gopher")], "http://r.example"),
              (nil, false, [], "http://"),
          ])
    func audience(publicURL: String?, tls: Bool, headers: [(String, String)], expected: String) {
        let gate = VAPIDGate(publicURL: publicURL, listenerIsTLS: tls)
        #expect(gate.audience(of: Self.request(headers)) == expected)
    }

    @Test("a restricted endpoint without VAPID is 401 with the scheme's challenge, and nothing is sent")
    func unauthenticated() throws {
        let sender = FakeSender()
        let handler = WebPushHandler(sender: sender, apps: exampleApps(),
                                   counters: InFlightDeliveries(maxInFlight: 10),
                                   logger: CapturedLog().logger, loop: try EventLoop())
        let hash = String(repeating: "A", count: 43)
        let response = try #require(handler.handle(webPushRequest(path: "/relay-to/production/\(testToken)?vapid=\(hash)"),
                                                   completion: { _ in }))
        #expect(response.status == 401)
        #expect(response.headers.contains(HTTPField(name: "WWW-Authenticate", value: "vapid")))
        #expect(sender.sent.isEmpty)
    }
}
