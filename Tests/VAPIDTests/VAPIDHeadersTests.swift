import Base64URL
import HTTPCore
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

private let noP256ECDSA = VAPIDHeaders.malformed("WebPush authorization without p256ecdsa= in Crypto-Key")

private func notAPoint(_ parameter: String) -> VAPIDHeaders {
    .malformed("\(parameter)= is not an uncompressed P-256 key (65 bytes, 0x04 first)")
}

/// A row: an Authorization value (nil: none) and Crypto-Key fields.
private func row(_ name: String, _ authorization: String?, cryptoKey: [String] = [], _ expected: VAPIDHeaders)
    -> HeaderCase {
    HeaderCase(name: name, headers: (authorization.map { [("Authorization", $0)] } ?? [])
        + cryptoKey.map { ("Crypto-Key", $0) }, expected: expected)
}

extension String {
    func replacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}

struct VAPIDHeadersTests {
    static let cases: [HeaderCase] = [
        // RFC 8292 §3: vapid t=…, k=…
        row("vapid t, k", "vapid t=\(token), k=\(key)", found),
        row("vapid k, t without a space (py_vapid's)", "vapid k=\(key),t=\(token)", found),
        row("scheme in capitals, quoted values", "VAPID t=\"\(token)\" , k=\"\(key)\"", found),
        row("a padded key in the standard alphabet", "Vapid t=\(token), k=\(paddedStandardKey)", found),
        row("vapid ignores Crypto-Key", "vapid t=\(token), k=\(key)", cryptoKey: ["p256ecdsa=\(base64URLEncode(otherKey))"],
            found),
        row("vapid without k", "vapid t=\(token)", .malformed("vapid authorization without k=")),
        row("vapid without t", "vapid k=\(key)", .malformed("vapid authorization without t=")),
        row("vapid with two keys", "vapid t=\(token), k=\(key), k=\(key)",
            .malformed("vapid authorization with more than one k=")),
        row("vapid with two tokens", "vapid t=\(token), t=\(token), k=\(key)",
            .malformed("vapid authorization with more than one t=")),
        row("vapid with nothing after it", "vapid", .malformed("vapid authorization without t=")),
        row("vapid with junk", "vapid \u{1}\u{7F}=;;,,=\"", .malformed("vapid authorization without t=")),
        row("an empty t", "vapid t=, k=\(key)", .malformed("empty VAPID JWT")),
        row("a key that is not base64url", "vapid t=\(token), k=%%%", .malformed("k= is not base64url")),
        row("a compressed key", "vapid t=\(token), k=\(base64URLEncode([0x02] + serverKey[1...32]))", notAPoint("k")),
        row("a 65-byte key not starting with 0x04", "vapid t=\(token), k=\(base64URLEncode([0x05] + serverKey.dropFirst()))",
            notAPoint("k")),
        row("a JWT over the limit", "vapid t=\(String(repeating: "a", count: 4097)), k=\(key)",
            .malformed("VAPID JWT longer than 4096 bytes")),

        // draft-ietf-webpush-vapid-01: WebPush <JWT> + Crypto-Key: p256ecdsa=…
        row("WebPush with Crypto-Key (Mastodon's aesgcm)", "WebPush \(token)", cryptoKey: ["dh=BCdh;p256ecdsa=\(key)"], found),
        row("webpush in lower case, the key in a second Crypto-Key field", "webpush   \(token)  ",
            cryptoKey: ["dh=BCdh", "p256ecdsa=\(paddedStandardKey)"], found),
        row("WebPush with the same key twice", "WebPush \(token)",
            cryptoKey: ["keyid=a;p256ecdsa=\(key), keyid=b;p256ecdsa=\(key)"], found),
        row("WebPush with two different keys", "WebPush \(token)",
            cryptoKey: ["p256ecdsa=\(key);p256ecdsa=\(base64URLEncode(otherKey))"],
            .malformed("Crypto-Key with more than one p256ecdsa key")),
        row("WebPush without Crypto-Key", "WebPush \(token)", noP256ECDSA),
        row("WebPush without p256ecdsa", "WebPush \(token)", cryptoKey: ["dh=BCdh"], noP256ECDSA),
        row("WebPush without a JWT", "WebPush", cryptoKey: ["p256ecdsa=\(key)"], .malformed("empty VAPID JWT")),
        row("WebPush with a junk key", "WebPush \(token)", cryptoKey: ["p256ecdsa=***"],
            .malformed("p256ecdsa= is not base64url")),
        row("WebPush with a compressed key", "WebPush \(token)",
            cryptoKey: ["p256ecdsa=\(base64URLEncode([0x03] + serverKey[1...32]))"], notAPoint("p256ecdsa")),

        // Neither: no VAPID authentication at all.
        row("no Authorization", nil, cryptoKey: ["p256ecdsa=\(key)"], .absent),
        row("another scheme", "Bearer \(token)", .absent),
        row("an empty Authorization", "", .absent),
        row("a scheme that only starts like vapid", "vapidx t=\(token), k=\(key)", .absent),
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
