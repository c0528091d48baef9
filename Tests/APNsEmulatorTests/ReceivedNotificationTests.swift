import Foundation
import Testing
@testable import APNsEmulator

@Suite("Received notifications")
struct ReceivedNotificationTests {
    static func sample(payload: [UInt8] = Array(#"{"aps":{"alert":"🎺"},"p":"a/b\"c"}"#.utf8)) -> ReceivedNotification {
        ReceivedNotification(
            deviceToken: String(repeating: "ab", count: 32),
            headers: [("apns-topic", "com.example.app"), ("authorization", "bearer secret.jwt.value"), ("apns-priority", "10")],
            payload: payload, apnsID: "123E4567-E89B-12D3-A456-426614174000", apnsIDWasGenerated: false,
            topic: "com.example.app", priority: 10, expiration: 1_700_000_000, collapseID: nil, pushType: "alert",
            authenticatedAs: "TEAM", connectionID: 1, streamID: 3)
    }

    @Test("jsonLine is one line of JSON with every field, headers as pairs, the token redacted")
    func jsonLine() throws {
        let line = Self.sample().jsonLine
        #expect(!line.contains("\n"))
        #expect(!line.contains("secret"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["token"] as? String == String(repeating: "ab", count: 32))
        #expect(object["apns_id"] as? String == "123E4567-E89B-12D3-A456-426614174000")
        #expect(object["topic"] as? String == "com.example.app")
        #expect(object["push_type"] as? String == "alert")
        #expect(object["priority"] as? Int == 10)
        #expect(object["expiration"] as? Int == 1_700_000_000)
        #expect(object["collapse_id"] == nil)
        #expect(object["authenticated_as"] as? String == "TEAM")
        #expect(object["payload"] as? String == #"{"aps":{"alert":"🎺"},"p":"a/b\"c"}"#)
        let headers = try #require(object["headers"] as? [[String]])
        #expect(headers == [["apns-topic", "com.example.app"], ["authorization", "<redacted>"], ["apns-priority", "10"]])
    }

    @Test("header(_:) finds the first field; payloadText survives invalid UTF-8")
    func accessors() {
        let notification = Self.sample(payload: [0x7b, 0xff, 0x7d])
        #expect(notification.header("apns-priority") == "10")
        #expect(notification.header("apns-expiration") == nil)
        #expect(notification.payloadText == "{\u{FFFD}}")
    }
}
