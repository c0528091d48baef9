// The FCM message a Web Push message becomes: the same data fields as the
// APNs payload of the URL (p, k, s, x), Android's ttl, collapse key and
// priority, the exact size, and the ciphertext dropped past FCM's limit.

import FCMCore
import Foundation
@testable import RelayCore
import TestSupport
import Testing

@Suite("The FCM message of a Web Push message")
struct FCMMessageTests {
    static let token = FCMToken("cXyZ0123-_:APA91bH1x2y3z4")!

    func decode(_ body: [UInt8]) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: Data(body)) as? NSDictionary)
    }

    func parts(_ body: [UInt8]) throws -> (data: NSDictionary, android: NSDictionary) {
        let message = try #require(try decode(body)["message"] as? NSDictionary)
        #expect(message["token"] as? String == Self.token.text)
        return (try #require(message["data"] as? NSDictionary), try #require(message["android"] as? NSDictionary))
    }

    @Test("writes the aesgcm message byte for byte")
    func exactMessage() throws {
        let message = WebPushMessage(encoding: .aesgcm(dh: [0xFF], salt: [0xFF, 0xFF]), body: [0, 0, 0, 0], ttl: 60,
                                     urgency: .low, topic: "news")
        let (body, dropped) = try makeFCMMessage(token: Self.token, message: message, extra: "a/b")
        #expect(String(decoding: body, as: UTF8.self) == #"{"message":{"token":"cXyZ0123-_:APA91bH1x2y3z4","#
            + #""data":{"p":"00000","k":"30","s":"960","x":"a/b"},"#
            + #""android":{"ttl":"60s","collapse_key":"news","priority":"normal"}}}"#)
        #expect(!dropped)
    }

    @Test("carries the APNs payload's fields, z85, as strings")
    func dataFields() throws {
        let body = Array("0123456789".utf8)
        let aesgcm = WebPushMessage(encoding: .aesgcm(dh: senderKey, salt: salt16), body: body, ttl: 0)
        let (data, _) = try parts(makeFCMMessage(token: Self.token, message: aesgcm, extra: "acct/42").body)
        #expect(data == ["p": Z85.encode(body), "k": Z85.encode(senderKey), "s": Z85.encode(salt16), "x": "acct/42"] as NSDictionary)
        #expect(try Z85.decode(try #require(data["p"] as? String)) == body)
        let aes128gcm = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 40), ttl: 0)
        let (plain, _) = try parts(makeFCMMessage(token: Self.token, message: aes128gcm, extra: nil).body)
        #expect(plain == ["p": Z85.encode(aes128gcmBody(records: 40))] as NSDictionary)
    }

    @Test("TTL becomes android.ttl in seconds, 0 included, at most four weeks", arguments: [
        (0, "0s"), (1, "1s"), (60, "60s"), (2_419_200, "2419200s"), (2_419_201, "2419200s"), (Int.max, "2419200s"),
    ])
    func ttl(seconds: Int, text: String) throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: [1], ttl: seconds)
        #expect(try parts(makeFCMMessage(token: Self.token, message: message, extra: nil).body).android["ttl"] as? String == text)
    }

    @Test("Urgency very-low and low are Android's normal priority, normal and high its high", arguments: [
        (Urgency.veryLow, "normal"), (.low, "normal"), (.normal, "high"), (.high, "high"),
    ])
    func priority(urgency: Urgency, priority: String) throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: [1], ttl: 1, urgency: urgency)
        #expect(urgency.fcmPriority.rawValue == priority)
        #expect(try parts(makeFCMMessage(token: Self.token, message: message, extra: nil).body).android["priority"] as? String
            == priority)
    }

    @Test("Topic becomes android.collapse_key, and is left out without one", arguments: [nil, "a", "Az09-_"] as [String?])
    func collapseKey(topic: String?) throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: [1], ttl: 1, topic: topic)
        let android = try parts(makeFCMMessage(token: Self.token, message: message, extra: nil).body).android
        #expect(android["collapse_key"] as? String == topic)
        #expect(android.count == (topic == nil ? 2 : 3))
    }

    @Test("the extra path is escaped so that it decodes to itself", arguments: WebPushNotificationTests.extras)
    func extraEscaped(extra: String) throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: [1, 2, 3], ttl: 1)
        let body = try makeFCMMessage(token: Self.token, message: message, extra: extra).body
        #expect(try parts(body).data["x"] as? String == extra)
        #expect(body.count == fcmMessageSize(token: Self.token, message: message, extra: extra))
    }

    @Test("the size is exact and the JSON valid for random messages, whole or without the ciphertext")
    func sizes() throws {
        var generator = SeededGenerator(seed: 8030)
        let extras: [String?] = [nil, "", "plain", "\"quoted\\ and \u{1}\u{1F}\t\n", "🎺 ünïcödé </x> & /"]
        for round in 0..<300 {
            let body = generator.bytes(Int.random(in: 0...4096, using: &generator))
            let encoding: ContentEncoding = round % 2 == 0 ? .aes128gcm : .aesgcm(dh: senderKey, salt: salt16)
            let message = WebPushMessage(encoding: encoding, body: body, ttl: Int.random(in: 0...3_000_000, using: &generator),
                                         urgency: Urgency.allCases[round % 4], topic: round % 3 == 0 ? nil : "t\(round)")
            let extra = extras[round % extras.count]
            let title = round % 2 == 0 ? fcmDefaultTitle : "Title \"\u{7}"
            let (built, dropped) = try makeFCMMessage(token: Self.token, message: message, extra: extra, title: title)
            let content: PayloadContent = dropped ? .withoutCiphertext : .whole
            #expect(built.count == fcmMessageSize(token: Self.token, message: message, extra: extra, title: title,
                                                  content: content))
            let (data, android) = try parts(built)
            #expect((data["p"] == nil) == dropped)
            #expect((android["notification"] == nil) == !dropped)
            #expect(dropped == (fcmDataSize(for: message, extra: extra, title: title) > FCMMessageLimits.maxDataBytes))
            #expect(fcmDataSize(for: message, extra: extra, title: title, content: content) <= FCMMessageLimits.maxDataBytes)
            if !dropped { #expect(try Z85.decode(try #require(data["p"] as? String)) == body) }
        }
    }

    @Test("a body whose data does not fit FCM's 4096 bytes goes without its ciphertext, with a title")
    func dropsTheCiphertext() throws {
        // 1 + z85(3276) = 4096 bytes of data: fits; one more byte does not.
        let fits = WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 7, count: 3276), ttl: 1)
        #expect(fcmDataSize(for: fits, extra: nil) == 4096)
        #expect(try makeFCMMessage(token: Self.token, message: fits, extra: nil).ciphertextDropped == false)
        let tooBig = WebPushMessage(encoding: .aesgcm(dh: senderKey, salt: salt16), body: [UInt8](repeating: 7, count: 3277), ttl: 1)
        let (body, dropped) = try makeFCMMessage(token: Self.token, message: tooBig, extra: "acct/1", title: "New \"post\"")
        #expect(dropped)
        let (data, android) = try parts(body)
        #expect(data == ["k": Z85.encode(senderKey), "s": Z85.encode(salt16), "x": "acct/1"] as NSDictionary)
        #expect(android["notification"] as? NSDictionary == ["title": "New \"post\""] as NSDictionary)
        let plain = WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 7, count: 4096), ttl: 1)
        let (withoutAny, _) = try makeFCMMessage(token: Self.token, message: plain, extra: nil)
        #expect(try parts(withoutAny).data.count == 0)
        #expect(try parts(withoutAny).android["notification"] as? NSDictionary == ["title": "🎺"] as NSDictionary)
    }

    @Test("413 for a body over 4096 bytes, or an extra path that fits not even without the ciphertext", arguments: [
        (4097, String?.none, "body of 4097 bytes (max 4096)"),
        (10, String(repeating: "x", count: 4087), "the endpoint's path makes 4097 bytes of FCM data without the body (max 4096)"),
    ])
    func tooLarge(bodyBytes: Int, extra: String?, reason: String) {
        let message = WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 1, count: bodyBytes), ttl: 1)
        #expect(throws: WebPushError(status: 413, reason: reason)) {
            try makeFCMMessage(token: Self.token, message: message, extra: extra)
        }
    }

    @Test("the longest extra path that fits without the ciphertext is sent")
    func longestExtra() throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 1, count: 10), ttl: 1)
        let (body, dropped) = try makeFCMMessage(token: Self.token, message: message, extra: String(repeating: "x", count: 4086))
        #expect(dropped)
        #expect(try parts(body).data["x"] as? String == String(repeating: "x", count: 4086))
    }
}
