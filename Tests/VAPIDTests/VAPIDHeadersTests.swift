import RelayCore
import Testing
@testable import VAPID

struct HeaderCase: Sendable, CustomTestStringConvertible {
    var name: String
    var headers: [(String, String)]
    var expected: VAPIDHeaders
    var testDescription: String { name }
}

private let key = base64URLEncode(serverKey)
private let token = jwt()
private let found = VAPIDHeaders.present(VAPIDAuthentication(token: token, publicKey: serverKey))
/// Padded, in the standard alphabet: the same key.
private let paddedStandardKey = key.replacingOccurrences("-", "+").replacingOccurrences("_", "/") + "="

extension String {
    func replacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}

struct VAPIDHeadersTests {
    static let cases: [HeaderCase] = [
        // RFC 8292 §3: vapid t=…, k=…
        HeaderCase(name: "vapid t, k", headers: [("Authorization", "vapid t=\(token), k=\(key)")], expected: found),
        HeaderCase(name: "vapid k, t without a space (py_vapid's)", headers: [("Authorization", "vapid k=\(key),t=\(token)")],
                   expected: found),
        HeaderCase(name: "scheme in capitals, quoted values", headers: [("authorization", "VAPID t=\"\(token)\" , k=\"\(key)\"")],
                   expected: found),
        HeaderCase(name: "a padded key in the standard alphabet", headers: [("Authorization", "Vapid t=\(token), k=\(paddedStandardKey)")],
                   expected: found),
        HeaderCase(name: "vapid ignores Crypto-Key", headers: [
            ("Authorization", "vapid t=\(token), k=\(key)"), ("Crypto-Key", "p256ecdsa=\(base64URLEncode(otherKey))"),
        ], expected: found),
        HeaderCase(name: "vapid without k", headers: [("Authorization", "vapid t=\(token)")],
                   expected: .malformed("vapid authorization without k=")),
        HeaderCase(name: "vapid without t", headers: [("Authorization", "vapid k=\(key)")],
                   expected: .malformed("vapid authorization without t=")),
        HeaderCase(name: "vapid with two keys", headers: [("Authorization", "vapid t=\(token), k=\(key), k=\(key)")],
                   expected: .malformed("vapid authorization with more than one k=")),
        HeaderCase(name: "vapid with two tokens", headers: [("Authorization", "vapid t=\(token), t=\(token), k=\(key)")],
                   expected: .malformed("vapid authorization with more than one t=")),
        HeaderCase(name: "vapid with nothing after it", headers: [("Authorization", "vapid")],
                   expected: .malformed("vapid authorization without t=")),
        HeaderCase(name: "vapid with junk", headers: [("Authorization", "vapid \u{1}\u{7F}=;;,,=\"")],
                   expected: .malformed("vapid authorization without t=")),
        HeaderCase(name: "an empty t", headers: [("Authorization", "vapid t=, k=\(key)")],
                   expected: .malformed("empty VAPID JWT")),
        HeaderCase(name: "a key that is not base64url", headers: [("Authorization", "vapid t=\(token), k=%%%")],
                   expected: .malformed("k= is not base64url")),
        HeaderCase(name: "a compressed key", headers: [("Authorization", "vapid t=\(token), k=\(base64URLEncode([0x02] + serverKey[1...32]))")],
                   expected: .malformed("k= is not an uncompressed P-256 key (65 bytes, 0x04 first)")),
        HeaderCase(name: "a 65-byte key not starting with 0x04", headers: [("Authorization", "vapid t=\(token), k=\(base64URLEncode([0x05] + serverKey.dropFirst()))")],
                   expected: .malformed("k= is not an uncompressed P-256 key (65 bytes, 0x04 first)")),
        HeaderCase(name: "a JWT over the limit", headers: [("Authorization", "vapid t=\(String(repeating: "a", count: 4097)), k=\(key)")],
                   expected: .malformed("VAPID JWT longer than 4096 bytes")),

        // draft-ietf-webpush-vapid-01: WebPush <JWT> + Crypto-Key: p256ecdsa=…
        HeaderCase(name: "WebPush with Crypto-Key (Mastodon's aesgcm)", headers: [
            ("Authorization", "WebPush \(token)"), ("Crypto-Key", "dh=BCdh;p256ecdsa=\(key)"),
        ], expected: found),
        HeaderCase(name: "webpush in lower case, key in a second Crypto-Key field", headers: [
            ("Authorization", "webpush   \(token)  "), ("Crypto-Key", "dh=BCdh"), ("crypto-key", "p256ecdsa=\(paddedStandardKey)"),
        ], expected: found),
        HeaderCase(name: "WebPush with the same key twice", headers: [
            ("Authorization", "WebPush \(token)"), ("Crypto-Key", "keyid=a;p256ecdsa=\(key), keyid=b;p256ecdsa=\(key)"),
        ], expected: found),
        HeaderCase(name: "WebPush with two different keys", headers: [
            ("Authorization", "WebPush \(token)"), ("Crypto-Key", "p256ecdsa=\(key);p256ecdsa=\(base64URLEncode(otherKey))"),
        ], expected: .malformed("Crypto-Key with more than one p256ecdsa key")),
        HeaderCase(name: "WebPush without Crypto-Key", headers: [("Authorization", "WebPush \(token)")],
                   expected: .malformed("WebPush authorization without p256ecdsa= in Crypto-Key")),
        HeaderCase(name: "WebPush without p256ecdsa", headers: [("Authorization", "WebPush \(token)"), ("Crypto-Key", "dh=BCdh")],
                   expected: .malformed("WebPush authorization without p256ecdsa= in Crypto-Key")),
        HeaderCase(name: "WebPush without a JWT", headers: [("Authorization", "WebPush"), ("Crypto-Key", "p256ecdsa=\(key)")],
                   expected: .malformed("empty VAPID JWT")),
        HeaderCase(name: "WebPush with a junk key", headers: [("Authorization", "WebPush \(token)"), ("Crypto-Key", "p256ecdsa=***")],
                   expected: .malformed("p256ecdsa= is not base64url")),

        // Neither: no VAPID authentication at all.
        HeaderCase(name: "no Authorization", headers: [("Crypto-Key", "p256ecdsa=\(key)")], expected: .absent),
        HeaderCase(name: "another scheme", headers: [("Authorization", "Bearer \(token)")], expected: .absent),
        HeaderCase(name: "an empty Authorization", headers: [("Authorization", "")], expected: .absent),
        HeaderCase(name: "a scheme that only starts like vapid", headers: [("Authorization", "vapidx t=\(token), k=\(key)")],
                   expected: .absent),
        HeaderCase(name: "two Authorization fields", headers: [
            ("Authorization", "vapid t=\(token), k=\(key)"), ("Authorization", "WebPush \(token)"),
        ], expected: .malformed("more than one Authorization field")),
    ]

    @Test("reads the VAPID header forms", arguments: cases)
    func reads(_ testCase: HeaderCase) {
        #expect(vapidAuthentication(in: HTTPHeaders(testCase.headers)) == testCase.expected)
    }

    @Test("reads py_vapid's headers in both forms")
    func readsPyVAPID() {
        for headers in [PyVAPID.vapid02, PyVAPID.vapid01] {
            guard case .present(let authentication) = vapidAuthentication(in: headers) else {
                Issue.record("not read: \(headers)")
                continue
            }
            #expect(authentication.publicKey == PyVAPID.key)
            #expect(authentication.token.hasPrefix(PyVAPID.signingInput + "."))
        }
    }
}
