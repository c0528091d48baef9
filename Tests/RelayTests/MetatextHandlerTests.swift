import APNsCore
import Base64URL
import Delivery
import Foundation
import HTTPCore
import RelayCore
import TestSupport
import Testing

@testable import Relay

@Suite("Web Push handler, metatext dialect")
struct MetatextHandlerTests {
    @Test("a /push request reaches APNs with the metatext payload and is answered 201 after APNs said 200",
          arguments: [
              ("/push/\(testToken)/42", APNsEnvironment.production),
              ("/push/\(testToken)/42?sandbox=true", .development),
              ("/push/com.example.app/\(testToken)/42?sandbox=true", .development),
              ("/push/com.example.app/\(testToken)/42", .production),
          ])
    func delivers(path: String, environment: APNsEnvironment) throws {
        let fixture = try WebPushHandlerFixture()
        let response = try #require(fixture.answer(webPushRequest(path: path, topic: "abc")))
        #expect(response.status == 201)
        let notification = try #require(fixture.sender.sent.first)
        #expect(notification.environment == environment)
        #expect(notification.path == "/3/device/" + testToken)
        #expect(notification.headers.contains(HTTPField(name: "apns-topic", value: "com.example.app")))
        #expect(notification.headers.contains(HTTPField(name: "apns-collapse-id", value: "abc")))
        #expect(notification.headers.contains(HTTPField(name: "apns-expiration", value: "1172800")))
        let payload = try #require(
            JSONSerialization.jsonObject(with: Data(notification.payload)) as? [String: Any])
        #expect(payload["i"] as? String == "42")
        #expect(payload["s"] as? String == testSalt)
        #expect(payload["k"] as? String == testDH)
        #expect((payload["m"] as? String).flatMap { try? base64URLDecode($0) } == [UInt8](repeating: 0xAB, count: 100))
        #expect(payload["p"] == nil)
    }

    @Test("APNs' verdicts map as for /relay-to, never a blind 202", arguments: [
        (DeliveryOutcome.apns(status: 410, reason: .unregistered, apnsID: nil), 410),
        (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), 410),
        (.apns(status: 403, reason: .badCertificate, apnsID: nil), 502),
        (.apns(status: 503, reason: .serviceUnavailable, apnsID: nil), 503),
        (.answerTimedOut, 504),
    ])
    func mapsOutcomes(outcome: DeliveryOutcome, status: Int) throws {
        let fixture = try WebPushHandlerFixture(outcome: outcome)
        #expect(fixture.answer(webPushRequest(path: "/push/\(testToken)/1"))?.status == status)
        #expect(fixture.sender.sent.count == 1)
    }

    @Test("the same 3000-byte body fits the toot-relay payload")
    func tootRelayFits() throws {
        let fixture = try WebPushHandlerFixture()
        #expect(fixture.answer(webPushRequest(body: [UInt8](repeating: 1, count: 3000)))?.status == 201)
    }
}
