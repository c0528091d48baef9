import APNsCore
import Foundation
import HTTPCore
@testable import RelayCore
import TestSupport
import Testing

struct WebPushNotificationTests {
    let target = RelayTarget(environment: .production, deviceToken: token64, extra: nil)

    func decodeJSON(_ payload: [UInt8]) throws -> NSDictionary {
        let object = try JSONSerialization.jsonObject(with: Data(payload))
        return try #require(object as? NSDictionary)
    }

    func aps() -> NSDictionary {
        ["alert": "🎺", "mutable-content": 1, "content-available": 1]
    }

    @Test("writes the aesgcm payload byte for byte")
    func exactPayload() throws {
        let message = WebPushMessage(encoding: .aesgcm(dh: [0xFF], salt: [0xFF, 0xFF]), body: [0, 0, 0, 0], ttl: 60)
        let notification = try makeNotification(
            target: RelayTarget(environment: .production, deviceToken: token64, extra: "a/b"), message: message,
            topic: "cx.c3.toot", credential: .primary, apnsID: "ID", now: 1000).notification
        let expected = #"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":"00000","k":"30","s":"960","x":"a/b"}"#
        #expect(String(decoding: notification.payload, as: UTF8.self) == expected)
    }

    @Test("decodes as the expected JSON object, aesgcm with x")
    func aesgcmJSON() throws {
        let body = Array("0123456789".utf8)
        let message = WebPushMessage(encoding: .aesgcm(dh: senderKey, salt: salt16), body: body, ttl: 60)
        let withExtra = RelayTarget(environment: .development, deviceToken: token64, extra: "acct/42")
        let notification = try makeNotification(target: withExtra, message: message, topic: "t", credential: .primary, apnsID: "I", now: 0).notification
        let expected: NSDictionary = [
            "aps": aps(), "p": Z85.encode(body), "k": Z85.encode(senderKey), "s": Z85.encode(salt16), "x": "acct/42",
        ]
        #expect(try decodeJSON(notification.payload) == expected)
        #expect(try Z85.decode(try #require(decodeJSON(notification.payload)["p"] as? String)) == body)
    }

    @Test("decodes as the expected JSON object, aes128gcm without x")
    func aes128gcmJSON() throws {
        let body = aes128gcmBody(records: 40)
        let message = WebPushMessage(encoding: .aes128gcm, body: body, ttl: 60)
        let notification = try makeNotification(target: target, message: message, topic: "t", credential: .primary, apnsID: "I", now: 0).notification
        let expected: NSDictionary = ["aps": aps(), "p": Z85.encode(body)]
        #expect(try decodeJSON(notification.payload) == expected)
    }

    static let extras: [String] = [
        #"quote " and backslash \ "#,
        "controls \u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F} end",
        "emoji 🎺👩‍👩‍👧 and é",
        "slash / less < greater > amp & and U+2028 \u{2028}",
        "\u{FFFD}",
        "",
    ]

    @Test("escapes x so that it decodes to itself", arguments: extras)
    func escaping(extra: String) throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 17), ttl: 1)
        let notification = try makeNotification(
            target: RelayTarget(environment: .production, deviceToken: token64, extra: extra), message: message,
            topic: "t", credential: .primary, apnsID: "I", now: 0).notification
        #expect(try decodeJSON(notification.payload)["x"] as? String == extra)
        #expect(notification.payload.count == apnsPayloadSize(for: message, extra: extra))
        let text = String(decoding: notification.payload, as: UTF8.self)
        #expect(!text.contains(#"\/"#))
        #expect(!text.contains(#"\u003c"#) && !text.contains(#"\u0026"#))
    }

    @Test("computes the payload size exactly for random messages")
    func sizes() {
        var generator = SeededGenerator(seed: 4096)
        for round in 0..<200 {
            let body = generator.bytes(Int.random(in: 0...3000, using: &generator))
            let encoding: ContentEncoding = round % 2 == 0 ? .aes128gcm : .aesgcm(dh: senderKey, salt: salt16)
            let extraBytes = generator.bytes(Int.random(in: 0...40, using: &generator))
            let extra: String? = round % 3 == 0 ? nil : String(decoding: extraBytes, as: UTF8.self)
            let message = WebPushMessage(encoding: encoding, body: body, ttl: 0)
            #expect(makeAPNsPayload(for: message, extra: extra).count == apnsPayloadSize(for: message, extra: extra))
        }
    }

    @Test("the payload written in place equals the one built by appending, byte for byte")
    func inPlaceMatchesAppended() {
        var generator = SeededGenerator(seed: 0x9A71)
        let extras: [String?] = [nil, "", "plain", "\"quoted\\ and \u{1}\u{1F}\t\n", "🎺 ünïcödé </x> & /", String(repeating: "\u{0}", count: 50)]
        for round in 0..<300 {
            let body = generator.bytes(Int.random(in: 0...3000, using: &generator))
            let encoding: ContentEncoding = round % 2 == 0 ? .aes128gcm : .aesgcm(dh: senderKey, salt: salt16)
            let extra = extras[round % extras.count]
            let message = WebPushMessage(encoding: encoding, body: body, ttl: 0)
            let size = apnsPayloadSize(for: message, extra: extra)
            let payload = makeAPNsPayload(for: message, extra: extra)
            #expect(payload == appendAPNsPayload(for: message, extra: extra, capacity: size))
            #expect(payload.count == size)
        }
    }

    /// The message (body length and x length) whose payload is exactly `size`.
    func message(payloadSize size: Int, encoding: ContentEncoding, withExtra: Bool) throws -> (WebPushMessage, String?) {
        let extraLength = withExtra ? 100 : 0
        let extra: String? = withExtra ? String(repeating: "x", count: extraLength) : nil
        for bodyLength in stride(from: 3300, through: 0, by: -1) {
            let candidate = WebPushMessage(encoding: encoding, body: [UInt8](repeating: 0x5A, count: bodyLength), ttl: 1)
            let candidateSize = apnsPayloadSize(for: candidate, extra: extra)
            if candidateSize == size { return (candidate, extra) }
            if candidateSize < size && withExtra {
                // z85 lengths skip 5k+1; x grows by one byte per character.
                let padded = String(repeating: "x", count: extraLength + size - candidateSize)
                return (candidate, padded)
            }
            if candidateSize < size { break }
        }
        throw PayloadSizeUnreachable(size: size)
    }

    struct PayloadSizeUnreachable: Error { var size: Int }

    @Test("a 4096-byte payload goes whole, one of 4097 without its ciphertext",
          arguments: [(ContentEncoding.aes128gcm, false), (.aes128gcm, true),
                      (.aesgcm(dh: senderKey, salt: salt16), false), (.aesgcm(dh: senderKey, salt: salt16), true)])
    func boundary(encoding: ContentEncoding, withExtra: Bool) throws {
        for (size, whole) in [(4096, true), (4097, false)] {
            let (message, extra) = try message(payloadSize: size, encoding: encoding, withExtra: withExtra)
            #expect(apnsPayloadSize(for: message, extra: extra) == size)
            let target = RelayTarget(environment: .production, deviceToken: token64, extra: extra)
            let (notification, dropped) = try makeNotification(target: target, message: message, topic: "t",
                                                               credential: .primary, apnsID: "I", now: 0)
            #expect(dropped == !whole)
            let expected = whole ? size : apnsPayloadSize(for: message, extra: extra, content: .withoutCiphertext)
            #expect(notification.payload.count == expected)
            #expect(notification.payload == makeAPNsPayload(for: message, extra: extra,
                                                            content: whole ? .whole : .withoutCiphertext))
            // The same body as a request: parseWebPush accepts it (the size
            // depends on the route), makeNotification decides the same.
            if !withExtra {
                var headers: [(String, String)] = [("TTL", "1")]
                switch encoding {
                case .aes128gcm: headers.append(("Content-Encoding", "aes128gcm"))
                case .aesgcm: headers = aesgcmHeaders
                }
                var body = message.body
                if case .aes128gcm = encoding {
                    let header = aes128gcmBody(records: 0)
                    body.replaceSubrange(0..<header.count, with: header)
                }
                let parsed = try parseWebPush(webPushRequest(headers, body: body)).get()
                let fromRequest = try makeNotification(target: target, message: parsed, topic: "t", credential: .primary,
                                                       apnsID: "I", now: 0)
                #expect(fromRequest.ciphertextDropped == !whole)
            }
        }
    }

    @Test("without its ciphertext the payload keeps every other key, as JSON the apps read",
          arguments: [(ContentEncoding.aes128gcm, nil as String?), (.aes128gcm, "acct/\"1\""),
                      (.aesgcm(dh: senderKey, salt: salt16), nil), (.aesgcm(dh: senderKey, salt: salt16), "x")])
    func payloadWithoutCiphertext(encoding: ContentEncoding, extra: String?) throws {
        let message = WebPushMessage(encoding: encoding, body: [UInt8](repeating: 7, count: 4000), ttl: 0)
        let payload = makeAPNsPayload(for: message, extra: extra, content: .withoutCiphertext)
        #expect(payload.count == apnsPayloadSize(for: message, extra: extra, content: .withoutCiphertext))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        var keys = ["aps"]
        if case .aesgcm = encoding { keys += ["k", "s"] }
        if extra != nil { keys.append("x") }
        #expect(object.keys.sorted() == keys.sorted())
        #expect(object["x"] as? String == extra)
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(aps["alert"] as? String == "🎺")
        #expect(aps["mutable-content"] as? Int == 1)
        if case .aesgcm(let dh, let salt) = encoding {
            #expect(object["k"] as? String == Z85.encode(dh))
            #expect(object["s"] as? String == Z85.encode(salt))
        }
    }

    @Test("a body over 4096 bytes is 413: more than RFC 8030 has a push service take")
    func bodyOver4096() {
        let message = WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 7, count: 4097), ttl: 0)
        let target = RelayTarget(environment: .production, deviceToken: token64, extra: nil)
        #expect(throws: WebPushError(status: 413, reason: "body of 4097 bytes (max 4096)")) {
            try makeNotification(target: target, message: message, topic: "t", credential: .primary, apnsID: "I", now: 0)
        }
    }

    @Test("sets path and APNs headers")
    func headers() throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 17), ttl: 172800,
                                     urgency: .low, topic: "coll-1")
        let notification = try makeNotification(target: target, message: message, topic: "cx.c3.toot", credential: .primary,
                                                 apnsID: "6C3A1D5E-0000-4000-8000-000000000000", now: 1_700_000_000).notification
        #expect(notification.path == "/3/device/" + token64)
        #expect(notification.environment == .production)
        #expect(notification.deviceToken == token64)
        #expect(notification.ttl == 172800)
        #expect(notification.apnsID == "6C3A1D5E-0000-4000-8000-000000000000")
        #expect(notification.headers == [
            HTTPField(name: "apns-push-type", value: "alert"),
            HTTPField(name: "apns-topic", value: "cx.c3.toot"),
            HTTPField(name: "apns-priority", value: "5"),
            HTTPField(name: "apns-expiration", value: "1700172800"),
            HTTPField(name: "apns-collapse-id", value: "coll-1"),
            HTTPField(name: "apns-id", value: "6C3A1D5E-0000-4000-8000-000000000000"),
        ])
    }

    @Test("TTL 0 means apns-expiration 0; no Topic means no collapse id")
    func ttlZero() throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 17), ttl: 0)
        let notification = try makeNotification(target: target, message: message, topic: "t", credential: .primary, apnsID: "I",
                                                 now: 1_700_000_000).notification
        #expect(notification.headers.first { $0.name == "apns-expiration" }?.value == "0")
        #expect(notification.headers.first { $0.name == "apns-priority" }?.value == "10")
        #expect(!notification.headers.contains { $0.name == "apns-collapse-id" })
    }

    @Test("decimal text of integers, negative and extreme ones included", arguments: [
        (0, "0"), (7, "7"), (10, "10"), (172_800, "172800"), (1_700_172_800, "1700172800"), (-5, "-5"),
        (-10, "-10"), (Int.max, "9223372036854775807"), (Int.min, "-9223372036854775808"),
    ])
    func decimal(value: Int, text: String) {
        #expect(decimalText(value) == text)
    }

    @Test("a TTL overflowing the clock expires at Int.max")
    func expirationOverflow() throws {
        let message = WebPushMessage(encoding: .aes128gcm, body: aes128gcmBody(records: 17), ttl: 10)
        let notification = try makeNotification(target: target, message: message, topic: "t", credential: .primary, apnsID: "I",
                                                 now: Int.max - 5).notification
        #expect(notification.headers.first { $0.name == "apns-expiration" }?.value == String(Int.max))
        #expect(notification.headers.map(\.name) == ["apns-push-type", "apns-topic", "apns-priority",
                                                     "apns-expiration", "apns-id"])
    }
}
