import APNsCore
import Base64URL
import Foundation
import HTTPCore
@testable import RelayCore
import TestSupport
import Testing

/// Ruby's `Base64.urlsafe_encode64`, which metatext-apns uses: padded.
private func rubyURLSafeBase64(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
}

private func metatextTarget(id: String) -> RelayTarget {
    RelayTarget(environment: .production, deviceToken: token64, dialect: .metatext(id: id))
}

private func notificationText(_ message: WebPushMessage, id: String, alert: APNsAlert? = nil) throws -> String {
    let notification = try makeNotification(target: metatextTarget(id: id), message: message, topic: "t", credential: .primary,
                                            alert: alert, apnsID: "I", now: 0).notification
    return String(decoding: notification.payload, as: UTF8.self)
}

struct MetatextPayloadTests {
    @Test("an aesgcm request's payload is metatext-apns' exactly: i, m padded, s and k as written")
    func aesgcmExact() throws {
        let body = [UInt8](repeating: 0xFB, count: 20)  // 20 bytes: one `=` of padding
        let dh = base64URLEncode(senderKey)
        let salt = base64URLEncode(salt16)
        let headers = aesgcm(replacing: "Crypto-Key", with: "dh=\(dh);p256ecdsa=BOGUS")
        let message = try parseWebPush(webPushRequest(headers, body: body)).get()
        let expected = #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"42","m":""#
            + rubyURLSafeBase64(body) + #"","s":""# + salt + #"","k":""# + dh + #""}"#
        #expect(try notificationText(message, id: "42") == expected)
        #expect(rubyURLSafeBase64(body).hasSuffix("="))
    }

    @Test("an aes128gcm request's payload carries the whole body as m and no s or k")
    func aes128gcmExact() throws {
        let body = aes128gcmBody(records: 17)
        let message = try parseWebPush(webPushRequest([("Content-Encoding", "aes128gcm"), ("TTL", "60")],
                                                      body: body)).get()
        let expected = #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"7","m":""#
            + rubyURLSafeBase64(body) + #""}"#
        #expect(try notificationText(message, id: "7") == expected)
    }

    @Test("m is base64url with padding for every length", arguments: 0..<7)
    func paddedBody(length: Int) {
        let body = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 77 + 0xF0) }
        let message = WebPushMessage(encoding: .aes128gcm, body: body, ttl: 0)
        let payload = String(decoding: makeMetatextPayload(for: message, id: "x"), as: UTF8.self)
        #expect(payload.contains(#""m":""# + rubyURLSafeBase64(body) + #"""#), "\(payload)")
        #expect(metatextPayloadSize(for: message, id: "x") == payload.utf8.count)
    }

    @Test("s and k are the parameter values as the sender wrote them", arguments: [
        // (Crypto-Key, Encryption, k, s)
        ("dh=\(base64URLEncode(senderKey))", "salt=\(base64URLEncode(salt16))",
         base64URLEncode(senderKey), base64URLEncode(salt16)),
        // Padded, as Ruby senders write them: kept padded.
        ("dh=\(base64URLEncode(senderKey))=", "salt=\(base64URLEncode(salt16))==",
         base64URLEncode(senderKey) + "=", base64URLEncode(salt16) + "=="),
        // The standard alphabet: kept, not translated.
        ("dh=\(Data(senderKey).base64EncodedString())", "rs=4096;salt=\(Data(salt16).base64EncodedString())",
         Data(senderKey).base64EncodedString(), Data(salt16).base64EncodedString()),
        // Quoted-strings (RFC 9110 §5.6.4): the value is what is inside the quotes.
        ("p256ecdsa=\"a;b\"; dh=\"\(base64URLEncode(senderKey))\"", "salt = \"\(base64URLEncode(salt16))\" ;rs=4096",
         base64URLEncode(senderKey), base64URLEncode(salt16)),
    ])
    func keysAsWritten(cryptoKey: String, encryption: String, key: String, salt: String) throws {
        var headers = aesgcm(replacing: "Crypto-Key", with: cryptoKey)
        headers = headers.filter { $0.0 != "Encryption" } + [("Encryption", encryption)]
        let message = try parseWebPush(webPushRequest(headers, body: [UInt8](repeating: 1, count: 20))).get()
        let payload = try notificationText(message, id: "1")
        #expect(payload.hasSuffix(#","s":""# + salt + #"","k":""# + key + #""}"#), "\(payload)")
    }

    @Test("i is the percent-decoded id, JSON-escaped", arguments: [
        ("acct/42", #"acct/42"#), ("a\"b\\c", #"a\"b\\c"#), ("日本", "日本"), ("\n", #"\n"#),
    ])
    func idEscaped(id: String, json: String) throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 17), ttl: 0)
        #expect(try notificationText(message, id: id).contains(#""i":""# + json + #"","m":"#))
        #expect(route(method: "POST", target: "/push/\(token64)/acct%2F42") == .relay(metatextTarget(id: "acct/42")))
    }

    @Test("an aesgcm message built without the header text gets its keys in base64url")
    func keysWithoutText() {
        let message = WebPushMessage(encoding: .aesgcm(dh: senderKey, salt: salt16), body: [1, 2, 3], ttl: 0)
        let payload = String(decoding: makeMetatextPayload(for: message, id: "1"), as: UTF8.self)
        #expect(payload.hasSuffix(#""s":""# + base64URLEncode(salt16) + #"","k":""# + base64URLEncode(senderKey)
                                  + #""}"#))
    }

    @Test("an app's alert replaces the default of either dialect")
    func alertOverride() throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 17), ttl: 0)
        #expect(try notificationText(message, id: "1", alert: .text("New \"post\""))
            .hasPrefix(#"{"aps":{"alert":"New \"post\"","mutable-content":1},"i":"1""#))
        let toot = try makeNotification(
            target: RelayTarget(environment: .production, deviceToken: token64, extra: nil), message: message,
            topic: "t", credential: .primary, alert: .localized(key: "push"), apnsID: "I", now: 0).notification
        #expect(String(decoding: toot.payload, as: UTF8.self)
            .hasPrefix(#"{"aps":{"alert":{"loc-key":"push"},"mutable-content":1,"content-available":1},"p":""#))
        #expect(makeAPNsPayload(for: message, extra: nil, alert: .text("🎺"))
                    == makeAPNsPayload(for: message, extra: nil))
        #expect(makeMetatextPayload(for: message, id: "1", alert: .localized(key: "apns-default-message"))
                    == makeMetatextPayload(for: message, id: "1"))
    }

    @Test("a metatext payload over 4096 bytes goes without m, at its own size: base64 is larger than z85", arguments: [
        ContentEncoding.aes128gcm, .aesgcm(dh: senderKey, salt: salt16),
    ])
    func sizeLimit(encoding: ContentEncoding) throws {
        // The largest body whose metatext payload fits, and one byte more.
        var fitting = 0
        for length in stride(from: 3100, through: 2900, by: -1) {
            let message = WebPushMessage(encoding: encoding, body: [UInt8](repeating: 3, count: length), ttl: 0)
            if metatextPayloadSize(for: message, id: "42") <= apnsMaxPayloadBytes {
                fitting = length
                break
            }
        }
        #expect(fitting > 0)
        let fits = WebPushMessage(encoding: encoding, body: [UInt8](repeating: 3, count: fitting), ttl: 0)
        let payload = try makeNotification(target: metatextTarget(id: "42"), message: fits, topic: "t", credential: .primary,
                                           apnsID: "I", now: 0).notification.payload
        #expect(payload.count == metatextPayloadSize(for: fits, id: "42"))
        let tooLarge = WebPushMessage(encoding: encoding, body: [UInt8](repeating: 3, count: fitting + 3), ttl: 0)
        // The toot-relay payload of the same body still fits: the limit is this payload's.
        #expect(apnsPayloadSize(for: tooLarge, extra: nil) <= apnsMaxPayloadBytes)
        let (withoutBody, dropped) = try makeNotification(target: metatextTarget(id: "42"), message: tooLarge, topic: "t",
                                                          credential: .primary, apnsID: "I", now: 0)
        #expect(dropped)
        let text = String(decoding: withoutBody.payload, as: UTF8.self)
        #expect(withoutBody.payload == makeMetatextPayload(for: tooLarge, id: "42", content: .withoutCiphertext))
        #expect(text.hasPrefix(#"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"42""#))
        #expect(!text.contains(#""m":"#))
        #expect(text.hasSuffix("\"}"))
    }

    @Test("the in-place payload equals the appended one, at its counted size, for random messages")
    func inPlaceMatchesAppended() {
        var random = SeededGenerator(seed: 12)
        for round in 0..<200 {
            let body = random.bytes(Int.random(in: 0..<400, using: &random))
            let encoding: ContentEncoding = round % 2 == 0 ? .aes128gcm : .aesgcm(dh: senderKey, salt: salt16)
            let message = WebPushMessage(encoding: encoding, body: body, ttl: 0)
            let id = String(decoding: random.bytes(Int.random(in: 0..<20, using: &random)).map { $0 & 0x7F },
                            as: UTF8.self)
            let payload = makeMetatextPayload(for: message, id: id)
            var appended: [UInt8] = []
            emitMetatextPayload(for: message, id: id, alert: nil, content: .whole, to: &appended)
            #expect(payload == appended)
            #expect(payload.count == metatextPayloadSize(for: message, id: id))
            let json = try? JSONSerialization.jsonObject(with: Data(payload))
            let object = json as? [String: Any]
            #expect(object?["i"] as? String == id)
            #expect((object?["m"] as? String).flatMap { try? base64URLDecode($0) } == body)
        }
    }
}
