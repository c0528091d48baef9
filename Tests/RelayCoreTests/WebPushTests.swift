import APNsCore
import Base64URL
import HTTPCore
@testable import RelayCore
import Testing
import TestSupport

let token64 = String(repeating: "0123456789abcdef", count: 4)

struct RouteCase: Sendable, CustomTestStringConvertible {
    var method: String
    var target: String
    var expected: Route
    var testDescription: String { "\(method) \(target.prefix(60))" }
}

func relay(_ environment: APNsEnvironment, _ token: String = token64, _ extra: String? = nil,
           app: AppReference = .defaultApp, vapid: [UInt8]? = nil) -> Route {
    .relay(RelayTarget(app: app, environment: environment, deviceToken: token, dialect: .tootRelay(extra: extra),
                       vapidKeyHash: vapid))
}

/// A restricted endpoint's `vapid=`: 32 bytes (a SHA-256), and
/// its query value, 43 base64url digits.
let keyHash32: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + 250) }
let keyHash43 = base64URLEncode(keyHash32)

/// A Web Push request as Mastodon sends it, with overrides.
func webPushRequest(_ headers: [(String, String)], body: [UInt8]) -> HTTP1Request {
    HTTP1Request(method: "POST", target: "/relay-to/production/" + token64, version: .http1_1,
                 headers: HTTPHeaders([("Host", "relay")] + headers), body: body, keepAlive: true)
}

/// An uncompressed P-256 point's shape: 0x04 and 64 bytes.
let senderKey: [UInt8] = [0x04] + (1...64).map { UInt8($0) }
let salt16: [UInt8] = (100..<116).map { UInt8($0) }

/// An aes128gcm body: RFC 8188 header (salt, rs, idlen, keyid) then `records` bytes.
func aes128gcmBody(records: Int, recordSize: UInt32 = 4096, keyID: [UInt8] = senderKey) -> [UInt8] {
    salt16 + [UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF),
              UInt8(recordSize & 0xFF), UInt8(keyID.count)] + keyID + [UInt8](repeating: 0xAB, count: records)
}

let aesgcmHeaders: [(String, String)] = [
    ("Content-Encoding", "aesgcm"),
    ("Crypto-Key", "dh=\(base64URLEncode(senderKey));p256ecdsa=BOGUSvapidKEY"),
    ("Encryption", "salt=\(base64URLEncode(salt16))"),
    ("TTL", "172800"),
    ("Urgency", "normal"),
]

struct WebPushErrorCase: Sendable, CustomTestStringConvertible {
    var name: String
    var headers: [(String, String)]
    var body: [UInt8]
    var status: Int
    var testDescription: String { "\(name) → \(status)" }
}

/// Replaces (or removes, with nil) headers of the aesgcm template.
func aesgcm(replacing name: String, with value: String?) -> [(String, String)] {
    var headers = aesgcmHeaders.filter { $0.0.lowercased() != name.lowercased() }
    if let value { headers.append((name, value)) }
    return headers
}

struct WebPushTests {
    static let routes: [RouteCase] = [
        RouteCase(method: "POST", target: "/relay-to/production/" + token64, expected: relay(.production)),
        RouteCase(method: "POST", target: "/relay-to/development/" + token64.uppercased(), expected: relay(.development)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)/", expected: relay(.production)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)/abc/def%20g",
                  expected: relay(.production, token64, "abc/def g")),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)/x?y=1#z",
                  expected: relay(.production, token64, "x")),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?y=1", expected: relay(.production)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)/a%zz%4",
                  expected: relay(.production, token64, "a%zz%4")),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)/%ff%C3%A9%2F",
                  expected: relay(.production, token64, "\u{FFFD}é/")),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)/a//b/",
                  expected: relay(.production, token64, "a//b/")),
        RouteCase(method: "POST", target: "http://relay.example/relay-to/production/" + token64,
                  expected: relay(.production)),
        RouteCase(method: "POST", target: "HTTPS://relay.example/relay-to/production/\(token64)/e",
                  expected: relay(.production, token64, "e")),
        RouteCase(method: "POST", target: "/relay-to/production/" + String(repeating: "ab", count: 100),
                  expected: relay(.production, String(repeating: "ab", count: 100))),
        RouteCase(method: "POST", target: "/relay-to/production/" + String(repeating: "ab", count: 101),
                  expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/" + String(token64.dropLast(2)), expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/" + token64 + "a", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/" + String(token64.dropLast()) + "g",
                  expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/%30" + String(token64.dropFirst()),
                  expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/staging/" + token64, expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/Production/" + token64, expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/", expected: .notFound),
        RouteCase(method: "GET", target: "/relay-to/_health", expected: .health(app: nil)),
        RouteCase(method: "HEAD", target: "/relay-to/_health", expected: .health(app: nil)),
        RouteCase(method: "GET", target: "/relay-to/_health?probe=1", expected: .health(app: nil)),
        RouteCase(method: "POST", target: "/relay-to/_health", expected: .methodNotAllowed(allow: "GET, HEAD")),
        RouteCase(method: "GET", target: "/relay-to/production/" + token64, expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "PUT", target: "/relay-to/whatever", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "post", target: "/relay-to/production/" + token64,
                  expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "GET", target: "/relay-to", expected: .notFound),
        RouteCase(method: "GET", target: "/", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-too/production/" + token64, expected: .notFound),
        RouteCase(method: "OPTIONS", target: "*", expected: .notFound),

        // Several apps: /relay-to/<app>/<env>/<token>[/extra].
        RouteCase(method: "POST", target: "/relay-to/feditext/production/" + token64,
                  expected: relay(.production, app: .id("feditext"))),
        RouteCase(method: "POST", target: "/relay-to/toot.beta/development/\(token64)/a%2Fb",
                  expected: relay(.development, token64, "a/b", app: .id("toot.beta"))),
        RouteCase(method: "POST", target: "/relay-to/to%6Ft/production/" + token64,
                  expected: relay(.production, app: .id("toot"))),
        RouteCase(method: "POST", target: "/relay-to/toot/staging/" + token64, expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/toot/production/", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/toot/production", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to//production/" + token64, expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/toot/toot/production/" + token64, expected: .notFound),
        RouteCase(method: "GET", target: "/relay-to/toot/production/" + token64,
                  expected: .methodNotAllowed(allow: "POST")),
        // One app's health.
        RouteCase(method: "GET", target: "/relay-to/_health/feditext", expected: .health(app: "feditext")),
        RouteCase(method: "HEAD", target: "/relay-to/_health/toot?x=1", expected: .health(app: "toot")),
        RouteCase(method: "POST", target: "/relay-to/_health/toot", expected: .methodNotAllowed(allow: "GET, HEAD")),
        RouteCase(method: "GET", target: "/relay-to/_health/toot/x", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "GET", target: "/relay-to/_healthy", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "POST", target: "/relay-to/_healthy/production/" + token64,
                  expected: relay(.production, app: .id("_healthy"))),

        // metatext-apns: /push/<token>/<id>, production unless sandbox=true.
        RouteCase(method: "POST", target: "/push/\(token64)/42", expected: push()),
        RouteCase(method: "POST", target: "/push/\(upperToken)/42", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=true", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?a=1&sandbox=true&b", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=%74rue", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=true#frag", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=false", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=TRUE", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=true&sandbox=false", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandboxes=true", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42#sandbox=true", expected: push()),
        RouteCase(method: "POST", target: "http://relay.example/push/\(token64)/42?sandbox=true",
                  expected: push(.development)),
        // The id is one segment, percent-decoded.
        RouteCase(method: "POST", target: "/push/\(token64)/acct%2F42%20x", expected: push(id: "acct/42 x")),
        RouteCase(method: "POST", target: "/push/\(token64)/100%", expected: push(id: "100%")),
        RouteCase(method: "POST", target: "/push/\(token64)/%FF", expected: push(id: "\u{FFFD}")),
        // Mona: /push/<app-or-topic>/<token>/<id>.
        RouteCase(method: "POST", target: "/push/com.example.mona/\(token64)/7",
                  expected: push(app: .idOrTopic("com.example.mona"), id: "7")),
        RouteCase(method: "POST", target: "/push/toot/\(token64)/7?sandbox=true",
                  expected: push(.development, app: .idOrTopic("toot"), id: "7")),
        RouteCase(method: "POST", target: "/push/com%2Eexample/\(token64)/7",
                  expected: push(app: .idOrTopic("com.example"), id: "7")),
        // Another method on /push/…: 405 Allow: POST, valid path or not.
        RouteCase(method: "GET", target: "/push/\(token64)/42", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "PUT", target: "/push/app/\(token64)/42", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "HEAD", target: "/push/", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "post", target: "/push/\(token64)/42", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "GET", target: "/push", expected: .notFound),

        // Restricted endpoints (RFC 8292 §4): vapid=<base64url of 32 bytes> on
        // any relay URL, the last vapid deciding; anything else there is 404.
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=\(keyHash43)",
                  expected: relay(.production, vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/toot/development/\(token64)/x?a=1&vapid=\(keyHash43)#f",
                  expected: relay(.development, token64, "x", app: .id("toot"), vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=\(keyHash43)=",
                  expected: relay(.production, vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?%76apid=\(keyHash43)",
                  expected: relay(.production, vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=junk&vapid=\(keyHash43)",
                  expected: relay(.production, vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapids=junk&VAPID=junk",
                  expected: relay(.production)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)#vapid=junk", expected: relay(.production)),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=\(keyHash43)&vapid=junk",
                  expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=\(keyHash43.dropLast())",
                  expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=\(keyHash43)AA",
                  expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)?vapid=\(keyHash43.dropLast())%21",
                  expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64)/42?vapid=\(keyHash43)&sandbox=true",
                  expected: push(.development, vapid: keyHash32)),
        RouteCase(method: "POST", target: "/push/toot/\(token64)/7?sandbox=true&vapid=\(keyHash43)",
                  expected: push(.development, app: .idOrTopic("toot"), id: "7", vapid: keyHash32)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?vapid=%2A", expected: .notFound),
        // A broken vapid= on a URL that is 404 or 405 anyway changes nothing.
        RouteCase(method: "POST", target: "/relay-to/staging/\(token64)?vapid=\(keyHash43)", expected: .notFound),
        RouteCase(method: "GET", target: "/relay-to/production/\(token64)?vapid=x",
                  expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "GET", target: "/relay-to/_health?vapid=x", expected: .health(app: nil)),
    ]

    @Test("routes requests", arguments: routes)
    func routing(_ testCase: RouteCase) {
        #expect(route(method: testCase.method, target: testCase.target) == testCase.expected)
    }

    @Test("accepts Mastodon's aesgcm request")
    func aesgcmRequest() throws {
        let body = [UInt8](repeating: 7, count: 100)
        let message = try parseWebPush(webPushRequest(aesgcmHeaders, body: body)).get()
        let text = AESGCMParameterText(dh: ArraySlice(base64URLEncode(senderKey).utf8),
                                       salt: ArraySlice(base64URLEncode(salt16).utf8))
        #expect(message == WebPushMessage(encoding: .aesgcm(dh: senderKey, salt: salt16), body: body, ttl: 172800,
                                          urgency: .normal, topic: nil, aesgcmText: text))
    }

    static let keyHeaderVariants: [(cryptoKey: String, encryption: String)] = [
        ("dh=\(base64URLEncode(senderKey))", "salt=\(base64URLEncode(salt16))"),
        // Padded, as Ruby's urlsafe_encode64 writes it.
        ("dh=\(base64URLEncode(senderKey))=", "salt=\(base64URLEncode(salt16))=="),
        (" p256ecdsa=abc ; dh = \(base64URLEncode(senderKey)) ;", "keyid=p1; salt=\(base64URLEncode(salt16))"),
        ("dh=\"\(base64URLEncode(senderKey))\";p256ecdsa=\"a;b,c\"", "salt=\"\(base64URLEncode(salt16))\""),
        ("keyid=a;dh=\(base64URLEncode(senderKey)), keyid=b;dh=\(base64URLEncode([0x04] + [UInt8](repeating: 9, count: 64)))",
         "keyid=a;salt=\(base64URLEncode(salt16)),keyid=b;salt=AAAAAAAAAAAAAAAAAAAAAA"),
        ("DH=\(base64URLEncode(senderKey).replacingURLAlphabet())", "Salt=\(base64URLEncode(salt16))"),
    ]

    @Test("reads dh and salt from parameter lists in their many spellings", arguments: keyHeaderVariants)
    func keyHeaders(cryptoKey: String, encryption: String) throws {
        var headers = aesgcm(replacing: "Crypto-Key", with: cryptoKey)
        headers = headers.filter { $0.0 != "Encryption" } + [("Encryption", encryption)]
        let message = try parseWebPush(webPushRequest(headers, body: [UInt8](repeating: 1, count: 20))).get()
        #expect(message.encoding == .aesgcm(dh: senderKey, salt: salt16))
    }

    @Test("reads dh from the first of several Crypto-Key fields")
    func severalFields() throws {
        let headers = aesgcm(replacing: "Crypto-Key", with: "p256ecdsa=abc")
            + [("Crypto-Key", "dh=\(base64URLEncode(senderKey))")]
        let message = try parseWebPush(webPushRequest(headers, body: [UInt8](repeating: 1, count: 20))).get()
        #expect(message.encoding == .aesgcm(dh: senderKey, salt: salt16))
    }

    @Test("accepts an aes128gcm request and ignores Crypto-Key and Encryption")
    func aes128gcmRequest() throws {
        let body = aes128gcmBody(records: 17)
        let headers: [(String, String)] = [("Content-Encoding", "AES128GCM"), ("TTL", "0"), ("Crypto-Key", "junk")]
        let message = try parseWebPush(webPushRequest(headers, body: body)).get()
        #expect(message == WebPushMessage(encoding: .aes128gcm, body: body, ttl: 0))
    }

    @Test("reads TTL, capping it", arguments: [("0", 0), ("60", 60), ("2592000", 2_592_000), ("2592001", 2_592_000),
                                               ("99999999999999999999999999", 2_592_000), ("007", 7)])
    func ttl(value: String, expected: Int) throws {
        let message = try parseWebPush(webPushRequest(aesgcm(replacing: "TTL", with: value),
                                                      body: [UInt8](repeating: 1, count: 20))).get()
        #expect(message.ttl == expected)
    }

    @Test("caps TTL at a configured maximum")
    func configuredMaxTTL() throws {
        let request = webPushRequest(aesgcmHeaders, body: [UInt8](repeating: 1, count: 20))
        #expect(try parseWebPush(request, maxTTL: 3600).get().ttl == 3600)
    }

    @Test("reads Urgency and maps it to an APNs priority",
          arguments: [(nil, Urgency.normal, 10), ("very-low", .veryLow, 5), ("low", .low, 5), ("normal", .normal, 10),
                      ("HIGH", .high, 10)])
    func urgency(value: String?, expected: Urgency, priority: Int) throws {
        let message = try parseWebPush(webPushRequest(aesgcm(replacing: "Urgency", with: value),
                                                      body: [UInt8](repeating: 1, count: 20))).get()
        #expect(message.urgency == expected)
        #expect(message.urgency.apnsPriority == priority)
    }

    @Test("reads Topic", arguments: [(nil, nil), ("", nil), ("abc-DEF_09", "abc-DEF_09"),
                                     (String(repeating: "t", count: 32), String(repeating: "t", count: 32))])
    func topic(value: String?, expected: String?) throws {
        var headers = aesgcmHeaders
        if let value { headers.append(("Topic", value)) }
        let message = try parseWebPush(webPushRequest(headers, body: [UInt8](repeating: 1, count: 20))).get()
        #expect(message.topic == expected)
    }

    static let errors: [WebPushErrorCase] = {
        let body = [UInt8](repeating: 1, count: 20)
        let key = base64URLEncode(senderKey)
        var cases: [WebPushErrorCase] = [
            WebPushErrorCase(name: "no Content-Encoding", headers: aesgcm(replacing: "Content-Encoding", with: nil),
                             body: body, status: 415),
            WebPushErrorCase(name: "gzip", headers: aesgcm(replacing: "Content-Encoding", with: "gzip"), body: body,
                             status: 415),
            WebPushErrorCase(name: "aesgcm128 (older draft)",
                             headers: aesgcm(replacing: "Content-Encoding", with: "aesgcm128"), body: body, status: 415),
            WebPushErrorCase(name: "no TTL", headers: aesgcm(replacing: "TTL", with: nil), body: body, status: 400),
            WebPushErrorCase(name: "empty TTL", headers: aesgcm(replacing: "TTL", with: ""), body: body, status: 400),
            WebPushErrorCase(name: "negative TTL", headers: aesgcm(replacing: "TTL", with: "-1"), body: body, status: 400),
            WebPushErrorCase(name: "fractional TTL", headers: aesgcm(replacing: "TTL", with: "1.5"), body: body,
                             status: 400),
            WebPushErrorCase(name: "word TTL", headers: aesgcm(replacing: "TTL", with: "forever"), body: body,
                             status: 400),
            WebPushErrorCase(name: "conflicting TTLs", headers: aesgcmHeaders + [("TTL", "5")], body: body, status: 400),
            WebPushErrorCase(name: "unknown Urgency", headers: aesgcm(replacing: "Urgency", with: "urgent"), body: body,
                             status: 400),
            WebPushErrorCase(name: "repeated Urgency", headers: aesgcmHeaders + [("Urgency", "normal")], body: body,
                             status: 400),
            WebPushErrorCase(name: "Topic too long", headers: aesgcmHeaders + [("Topic", String(repeating: "t", count: 33))],
                             body: body, status: 400),
            WebPushErrorCase(name: "Topic with +", headers: aesgcmHeaders + [("Topic", "a+b")], body: body, status: 400),
            WebPushErrorCase(name: "Topic with padding", headers: aesgcmHeaders + [("Topic", "ab==")], body: body,
                             status: 400),
            WebPushErrorCase(name: "repeated Topic", headers: aesgcmHeaders + [("Topic", "a"), ("Topic", "b")],
                             body: body, status: 400),
            WebPushErrorCase(name: "no Crypto-Key", headers: aesgcm(replacing: "Crypto-Key", with: nil), body: body,
                             status: 400),
            WebPushErrorCase(name: "Crypto-Key without dh",
                             headers: aesgcm(replacing: "Crypto-Key", with: "p256ecdsa=\(key)"), body: body, status: 400),
            WebPushErrorCase(name: "dh not base64", headers: aesgcm(replacing: "Crypto-Key", with: "dh=!!!!"), body: body,
                             status: 400),
            WebPushErrorCase(name: "dh too short",
                             headers: aesgcm(replacing: "Crypto-Key", with: "dh=" + base64URLEncode(senderKey.dropLast())),
                             body: body, status: 400),
            WebPushErrorCase(name: "dh compressed",
                             headers: aesgcm(replacing: "Crypto-Key",
                                             with: "dh=" + base64URLEncode([0x02] + senderKey.dropFirst())),
                             body: body, status: 400),
            WebPushErrorCase(name: "no Encryption", headers: aesgcm(replacing: "Encryption", with: nil), body: body,
                             status: 400),
            WebPushErrorCase(name: "Encryption without salt",
                             headers: aesgcm(replacing: "Encryption", with: "rs=4096"), body: body, status: 400),
            WebPushErrorCase(name: "salt of 15 bytes",
                             headers: aesgcm(replacing: "Encryption", with: "salt=" + base64URLEncode(salt16.dropLast())),
                             body: body, status: 400),
            WebPushErrorCase(name: "salt not base64",
                             headers: aesgcm(replacing: "Encryption", with: "salt=a b"), body: body, status: 400),
            WebPushErrorCase(name: "aesgcm body shorter than a record", headers: aesgcmHeaders,
                             body: [UInt8](repeating: 1, count: 17), status: 400),
        ]
        let aes128: [(String, String)] = [("Content-Encoding", "aes128gcm"), ("TTL", "60")]
        cases += [
            WebPushErrorCase(name: "aes128gcm empty body", headers: aes128, body: [], status: 400),
            WebPushErrorCase(name: "aes128gcm body shorter than its header", headers: aes128,
                             body: Array(aes128gcmBody(records: 0).prefix(20)), status: 400),
            WebPushErrorCase(name: "aes128gcm rs 17", headers: aes128, body: aes128gcmBody(records: 17, recordSize: 17),
                             status: 400),
            WebPushErrorCase(name: "aes128gcm without keyid", headers: aes128,
                             body: aes128gcmBody(records: 100, keyID: []), status: 400),
            WebPushErrorCase(name: "aes128gcm compressed keyid", headers: aes128,
                             body: aes128gcmBody(records: 17, keyID: [0x03] + senderKey.dropFirst()), status: 400),
            WebPushErrorCase(name: "aes128gcm header only", headers: aes128, body: aes128gcmBody(records: 0),
                             status: 400),
            WebPushErrorCase(name: "aes128gcm record shorter than a tag and delimiter", headers: aes128,
                             body: aes128gcmBody(records: 16), status: 400),
        ]
        return cases
    }()

    @Test("refuses bad Web Push requests with the right status", arguments: errors)
    func refuses(_ testCase: WebPushErrorCase) {
        switch parseWebPush(webPushRequest(testCase.headers, body: testCase.body)) {
        case .success(let message):
            Issue.record("expected \(testCase.status), got \(message)")
        case .failure(let error):
            #expect(error.status == testCase.status, "\(error.reason)")
            #expect(!error.reason.isEmpty && !error.reason.contains("\n"))
        }
    }

    @Test("splits parameter lists with quotes and escapes")
    func parameterLists() {
        let parsed = parameters(in: #" a=1 ;B = "x;y,\"z\"" , c , =d, e="#)
        #expect(parsed.map(\.name) == ["a", "b", "e"])
        #expect(parsed.map(\.value) == ["1", #"x;y,"z""#, ""])
    }

    @Test("the in-place parameter scan finds what the full split finds", arguments: [
        (#" a=1 ;B = "x;y,\"z\"" , c , =d, e="#, "b"),
        (#" a=1 ;B = "x;y,\"z\"" , c , =d, e="#, "E"),
        (#" a=1 ;B = "x;y,\"z\"" , c , =d, e="#, "c"),
        (#" a=1 ;B = "x;y,\"z\"" , c , =d, e="#, "d"),
        ("dh=BAAA;p256ecdsa=BBBB", "p256ecdsa"),
        ("keyid=a;dh=first, keyid=b;dh=second", "dh"),
        (#"salt="unterminated;dh=x"#, "salt"),
        (#"salt="unterminated;dh=x"#, "dh"),
        ("DH = spaced ", "dh"),
        ("dhx=1;xdh=2", "dh"),
        ("", "dh"),
    ])
    func parameterValueMatchesSplit(text: String, name: String) {
        let expected = parameters(in: text).first { $0.name == name.lowercased() }?.value
        #expect(parameterValue(named: name, in: [text]) == expected)
    }

    @Test("the first header value holding the parameter wins")
    func parameterValueAcrossValues() {
        #expect(parameterValue(named: "dh", in: ["p256ecdsa=k", "dh=second", "dh=third"]) == "second")
        #expect(parameterValue(named: "dh", in: []) == nil)
    }
}

extension String {
    /// base64url → standard alphabet.
    fileprivate func replacingURLAlphabet() -> String {
        String(self.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
    }
}

struct WebPushExtremeLimitTests {
    @Test("does not overflow with an unlimited TTL cap")
    func unlimitedTTL() throws {
        let request = webPushRequest(aesgcm(replacing: "TTL", with: String(repeating: "9", count: 40)),
                                     body: [UInt8](repeating: 1, count: 20))
        #expect(try parseWebPush(request, maxTTL: Int.max).get().ttl == Int.max)
        let message = try parseWebPush(request, maxTTL: Int.max).get()
        let notification = try makeNotification(
            target: RelayTarget(environment: .production, deviceToken: token64, extra: nil), message: message,
            topic: "t", credential: .primary, apnsID: "I", now: 1_700_000_000).notification
        #expect(notification.headers.first { $0.name == "apns-expiration" }?.value == String(Int.max))
    }
}

struct ParameterValueBytesTests {
    @Test("the in-place scan over header bytes finds what the String scan finds", arguments: [
        ["dh=BAAA;p256ecdsa=BBBB"],
        ["p256ecdsa=k", "dh=second", "dh=third"],
        [#"keyid=a;DH="quo\"ted""#],
        ["DH = spaced "],
        ["dhx=1;xdh=2"],
        [],
        [""],
    ])
    func matchesStrings(values: [String]) {
        let headers = HTTPHeaders(values.map { ("Crypto-Key", $0) })
        let bytes = parameterValueBytes(named: "dh", in: headers.valueBytes(for: "crypto-key"))
        #expect(bytes.map { String(decoding: $0, as: UTF8.self) } == parameterValue(named: "dh", in: values))
    }
}
