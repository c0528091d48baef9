import APNsCore
import Delivery
import HTTPCore
import RelayCore
import TestSupport
import Testing

@testable import Relay

private func header(_ response: HTTP1Response?, _ name: String) -> String? {
    response?.headers.first { $0.name.lowercased() == name.lowercased() }?.value
}

private func bodyText(_ response: HTTP1Response?) -> String {
    String(decoding: response?.body ?? [], as: UTF8.self)
}

@Suite("Web Push handler")
struct WebPushHandlerTests {
    @Test("a valid Web Push becomes one APNs notification; 201 with Location and TTL only after APNs said 200")
    func deliversAndAnswers201() throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2)
        var delivered: HTTP1Response?
        let immediate = fixture.handler.handle(webPushRequest(topic: "abc"), completion: { delivered = $0 })
        #expect(immediate == nil)
        #expect(delivered == nil)
        #expect(fixture.counters.inFlight == 1)
        let notification = try #require(fixture.sender.sent.first)
        #expect(notification.path == "/3/device/" + testToken)
        #expect(notification.headers.contains(HTTPField(name: "apns-topic", value: "com.example.app")))
        #expect(notification.headers.contains(HTTPField(name: "apns-expiration", value: "1172800")))
        #expect(notification.headers.contains(HTTPField(name: "apns-collapse-id", value: "abc")))
        fixture.sender.completeAll()
        let response = try #require(delivered)
        #expect(response.status == 201)
        #expect(header(response, "Location") == "/relay-to/message/" + notification.apnsID)
        #expect(header(response, "TTL") == "172800")
        #expect(fixture.counters.inFlight == 0)
        let line = try #require(fixture.logLines.last)
        #expect(line.contains("env=production token=01234567 status=201 apns=200"))
        #expect(!line.contains(testToken))
        // The whole line: `relay app= service=apns env= token= status= apns= reason="" latency=N.Nms apns-id=`.
        let message = try #require(line.split(separator: " ", maxSplits: 2).last)
        let prefix = #"relay app=default service=apns env=production token=01234567 status=201 apns=200 reason="-" latency="#
        #expect(message.hasPrefix(prefix))
        #expect(message.hasSuffix("ms apns-id=" + notification.apnsID + "\n"))
        let latency = message.dropFirst(prefix.count).prefix { $0 != " " }
        #expect(latency.wholeMatch(of: /[0-9]+\.[0-9]ms/) != nil, "\(latency)")
    }

    @Test("every APNs outcome maps to its status (WIRE.md §3)", arguments: [
        (DeliveryOutcome.apns(status: 410, reason: .unregistered, apnsID: nil), 410),
        (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), 410),
        (.apns(status: 400, reason: .deviceTokenNotForTopic, apnsID: nil), 410),
        (.apns(status: 413, reason: .payloadTooLarge, apnsID: nil), 502),
        (.apns(status: 429, reason: .tooManyRequests, apnsID: nil), 503),
        (.apns(status: 400, reason: .badTopic, apnsID: nil), 502),
        (.apns(status: 403, reason: .badCertificate, apnsID: nil), 502),
        (.apns(status: 404, reason: .badPath, apnsID: nil), 502),
        (.apns(status: 405, reason: .methodNotAllowed, apnsID: nil), 502),
        (.apns(status: 500, reason: .internalServerError, apnsID: nil), 503),
        (.apns(status: 503, reason: .serviceUnavailable, apnsID: nil), 503),
        (.answerTimedOut, 504),
        (.connectFailed("refused"), 502),
        (.tlsFailed("bad cert"), 502),
        (.streamFailed("reset"), 502),
        (.allConnectionsDown, 503),
    ])
    func statusTable(outcome: DeliveryOutcome, status: Int) throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2, outcome: outcome)
        let response = try #require(fixture.answer(webPushRequest()))
        #expect(response.status == status)
        #expect(bodyText(response).hasSuffix("\n"))
        #expect(bodyText(response).filter { $0 == "\n" }.count == 1)
    }

    @Test("a 403 turns the health check 503 until the next 201")
    func healthFollowsCredentials() throws {
        let rejected = try WebPushHandlerFixture(maxInFlight: 2, outcome: .apns(status: 403, reason: .badCertificate, apnsID: nil))
        let health = HTTP1Request(method: "GET", target: "/relay-to/_health", version: .http1_1, headers: [:],
                                  body: [], keepAlive: true)
        #expect(rejected.answer(health)?.status == 200)
        #expect(bodyText(rejected.answer(health)) == "OK")
        #expect(rejected.answer(webPushRequest())?.status == 502)
        #expect(rejected.answer(health)?.status == 503)
        #expect(rejected.logLines.contains { $0.contains(" error relay ") })
        rejected.handler.apps.defaultApp?.health.record(.accepted)
        #expect(rejected.answer(health)?.status == 200)
    }

    static let badRequests: [(HTTP1Request, Int)] = [
        (webPushRequest(ttl: nil), 400),
        (webPushRequest(ttl: "soon"), 400),
        (webPushRequest(urgency: "urgent"), 400),
        (webPushRequest(topic: "not a topic!"), 400),
        (webPushRequest(encoding: nil), 415),
        (webPushRequest(encoding: "gzip"), 415),
        // Over the 4096 bytes RFC 8030 §7.2 has a push service take.
        (webPushRequest(body: [UInt8](repeating: 1, count: 4097)), 413),
        (webPushRequest(path: "/relay-to/staging/" + testToken), 404),
        (webPushRequest(path: "/relay-to/production/xyz"), 404),
        (webPushRequest(path: "/elsewhere"), 404),
        (HTTP1Request(method: "GET", target: "/relay-to/production/" + testToken, version: .http1_1, headers: [:],
                      body: [], keepAlive: true), 405),
        (HTTP1Request(method: "POST", target: "/relay-to/_health", version: .http1_1, headers: [:],
                      body: [], keepAlive: true), 405),
        // The metatext dialect (/push/…).
        (webPushRequest(path: "/push/com.example.other/\(testToken)/42"), 503),
        (webPushRequest(path: "/push/\(testToken)"), 404),
        (webPushRequest(path: "/push/\(testToken)/42/more"), 404),
        (webPushRequest(path: "/push/xyz/42"), 404),
        (webPushRequest(path: "/push/\(testToken)/42", ttl: nil), 400),
        (webPushRequest(path: "/push/\(testToken)/42", encoding: "gzip"), 415),
        (webPushRequest(path: "/push/\(testToken)/42", body: [UInt8](repeating: 1, count: 4097)), 413),
        (HTTP1Request(method: "GET", target: "/push/\(testToken)/42", version: .http1_1, headers: [:], body: [],
                      keepAlive: true), 405),
    ]

    @Test("bad input is answered at once, without APNs traffic", arguments: badRequests)
    func badInput(request: HTTP1Request, status: Int) throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2)
        let response = try #require(fixture.handler.handle(request, completion: { _ in
            Issue.record("no completion expected")
        }))
        #expect(response.status == status)
        #expect(fixture.sender.sent.isEmpty)
        if status == 405 { #expect(header(response, "Allow") != nil) }
    }

    @Test("requests answered without APNs log one line each, in the same words as ever", arguments: [
        (webPushRequest(ttl: nil), #"relay app=default service=apns env=production token=01234567 status=400 apns=- reason="missing TTL header" latency="#),
        (webPushRequest(path: "/elsewhere"), #"POST status=404 reason="no such route" latency="#),
        (HTTP1Request(method: "GET", target: "/relay-to/production/" + testToken, version: .http1_1, headers: [:],
                      body: [], keepAlive: true), #"GET status=405 reason="method not allowed" latency="#),
    ])
    func localLines(request: HTTP1Request, expected: String) throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2)
        _ = fixture.handler.handle(request, completion: { _ in })
        let line = try #require(fixture.logLines.last)
        let message = try #require(line.split(separator: " ", maxSplits: 2).last)
        #expect(message.hasPrefix(expected), "\(message)")
        #expect(message.dropFirst(expected.count).wholeMatch(of: /[0-9]+\.[0-9]ms\n/) != nil, "\(message)")
    }

    @Test("an extra path too long for the payload even without the body is 413: that endpoint can never work")
    func extraTooLong() throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2)
        let extra = String(repeating: "x", count: 4000)
        let response = try #require(fixture.handler.handle(
            webPushRequest(path: "/relay-to/production/\(testToken)/\(extra)",
                           body: [UInt8](repeating: 1, count: 1000)), completion: { _ in }))
        #expect(response.status == 413)
        #expect(fixture.sender.sent.isEmpty)
    }

    static let oversizedOnceEncoded: [(path: String, bodyBytes: Int, ciphertextKey: String)] = [
        // 3500 bytes: z85 makes 4375.
        ("/relay-to/production/\(testToken)", 3500, #""p":"#),
        ("/relay-to/production/\(testToken)", 4096, #""p":"#),
        // An extra path that leaves no room for the body, but for itself.
        ("/relay-to/production/\(testToken)/" + String(repeating: "x", count: 3000), 1000, #""p":"#),
        // 3000 bytes: z85 fits (3750 + keys), base64 (4000 + keys) does not.
        ("/push/\(testToken)/42", 3000, #""m":"#),
        ("/push/\(testToken)/42", 4096, #""m":"#),
    ]

    @Test("a body of at most 4096 bytes that does not fit once encoded goes without its ciphertext, 201 once APNs took it",
          arguments: oversizedOnceEncoded)
    func oversizedBodyGoesWithoutCiphertext(_ example: (path: String, bodyBytes: Int, ciphertextKey: String)) throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2)
        let response = fixture.answer(webPushRequest(path: example.path,
                                                     body: [UInt8](repeating: 1, count: example.bodyBytes)))
        #expect(response?.status == 201)
        let sent = try #require(fixture.sender.sent.first)
        let payload = String(decoding: sent.payload, as: UTF8.self)
        #expect(sent.payload.count <= apnsMaxPayloadBytes)
        #expect(!payload.contains(example.ciphertextKey), "\(payload.prefix(120))")
        #expect(payload.hasPrefix(#"{"aps":{"alert":"#))
        #expect(fixture.logLines.contains { $0.contains("sent without its ciphertext") && $0.contains("app=default") })
    }

    @Test("beyond MAX_IN_FLIGHT the relay answers 503 with Retry-After: 1")
    func overloaded() throws {
        let fixture = try WebPushHandlerFixture(maxInFlight: 2)
        #expect(fixture.handler.handle(webPushRequest(), completion: { _ in }) == nil)
        #expect(fixture.handler.handle(webPushRequest(), completion: { _ in }) == nil)
        let response = try #require(fixture.handler.handle(webPushRequest(), completion: { _ in }))
        #expect(response.status == 503)
        #expect(header(response, "Retry-After") == "1")
        #expect(fixture.sender.sent.count == 2)
        fixture.sender.completeAll()
        #expect(fixture.counters.inFlight == 0)
    }
}
