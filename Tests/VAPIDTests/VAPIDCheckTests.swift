import Base64URL
import HTTPCore
import RelayCore
import Testing
@testable import VAPID

/// A verdict without the 503 reasons' numbers: what a row expects.
enum Expected: Sendable, Equatable {
    case accepted
    case unauthenticated
    case forbidden(String)
    case unverifiable(VAPIDDoubt)

    init(_ verdict: VAPIDVerdict) {
        switch verdict {
        case .accepted: self = .accepted
        case .unauthenticated: self = .unauthenticated
        case .forbidden(let reason): self = .forbidden(reason)
        case .unverifiable(let doubt, _): self = .unverifiable(doubt)
        }
    }
}

struct CheckCase: Sendable, CustomTestStringConvertible {
    var name: String
    var headers: HTTPHeaders
    var expected: Expected
    var testDescription: String { name }
}

private func claims(aud: String = #""https://relay.example""#, exp: String = "1800003600") -> String {
    #"{"aud":\#(aud),"exp":\#(exp),"sub":"mailto:admin@example.com"}"#
}

private let keyMismatch = Expected.forbidden("VAPID key is not the endpoint's (vapid= is the SHA-256 of another key)")
private let badSignature = Expected.forbidden("VAPID JWT signature does not verify with its key")
private let notThreeParts = Expected.forbidden("VAPID JWT is not three base64url parts")
private let badHeader = Expected.forbidden("VAPID JWT header is not a JSON object with a string alg")
private let notES256 = Expected.forbidden("VAPID JWT alg is not ES256")
private let badClaims = Expected.forbidden("VAPID JWT claims are not a JSON object with a string aud and a numeric exp")
private let signatureLength = Expected.forbidden("VAPID JWT signature is not 64 bytes (ES256 r||s)")
private let lastAccepted = now + 86_400 + 300

struct VAPIDCheckTests {
    static let cases: [CheckCase] = [
        CheckCase(name: "the endpoint's key, vapid form", headers: vapidHeaders(), expected: .accepted),
        CheckCase(name: "the endpoint's key, WebPush form",
                  headers: ["Authorization": "WebPush \(jwt())", "Crypto-Key": "p256ecdsa=\(base64URLEncode(serverKey))"],
                  expected: .accepted),
        CheckCase(name: "no typ, another typ", headers: vapidHeaders(token: jwt(header: #"{"alg":"ES256","typ":"jose"}"#)),
                  expected: .accepted),
        CheckCase(name: "aud with capitals, the default port and a slash",
                  headers: vapidHeaders(token: jwt(claims: claims(aud: #""HTTPS://Relay.Example:443/""#))), expected: .accepted),
        CheckCase(name: "exp one second ahead", headers: vapidHeaders(token: jwt(claims: claims(exp: "\(now + 1)"))),
                  expected: .accepted),
        CheckCase(name: "exp 24 h and the tolerated skew ahead",
                  headers: vapidHeaders(token: jwt(claims: claims(exp: "\(lastAccepted)"))), expected: .accepted),
        CheckCase(name: "a fractional exp", headers: vapidHeaders(token: jwt(claims: claims(exp: "1800003600.75"))),
                  expected: .accepted),

        CheckCase(name: "no Authorization", headers: ["TTL": "60"], expected: .unauthenticated),
        CheckCase(name: "another scheme", headers: ["Authorization": "Basic dXNlcjpwYXNz"], expected: .unauthenticated),
        CheckCase(name: "vapid without k", headers: ["Authorization": "vapid t=\(jwt())"],
                  expected: .forbidden("vapid authorization without k=")),

        CheckCase(name: "one part", headers: vapidHeaders(token: "eyJhbGciOiJFUzI1NiJ9"), expected: notThreeParts),
        CheckCase(name: "four parts", headers: vapidHeaders(token: jwt() + ".e30"), expected: notThreeParts),
        CheckCase(name: "an empty part", headers: vapidHeaders(token: "eyJhbGciOiJFUzI1NiJ9..AAAA"), expected: notThreeParts),
        CheckCase(name: "a part that is not base64url", headers: vapidHeaders(token: "eyJhbGciOiJFUzI1NiJ9.e30!.AAAA"),
                  expected: notThreeParts),
        CheckCase(name: "a header that is not JSON", headers: vapidHeaders(token: jwt(header: "alg=ES256")), expected: badHeader),
        CheckCase(name: "a header that is an array", headers: vapidHeaders(token: jwt(header: #"["ES256"]"#)), expected: badHeader),
        CheckCase(name: "a header without alg", headers: vapidHeaders(token: jwt(header: #"{"typ":"JWT"}"#)), expected: badHeader),
        CheckCase(name: "alg none", headers: vapidHeaders(token: jwt(header: #"{"alg":"none"}"#)), expected: notES256),
        CheckCase(name: "alg in lower case", headers: vapidHeaders(token: jwt(header: #"{"alg":"es256"}"#)), expected: notES256),
        CheckCase(name: "alg RS256", headers: vapidHeaders(token: jwt(header: #"{"alg":"RS256"}"#)), expected: notES256),
        CheckCase(name: "crit extensions", headers: vapidHeaders(token: jwt(header: #"{"alg":"ES256","crit":["b64"]}"#)),
                  expected: .forbidden("VAPID JWT header has crit extensions")),
        CheckCase(name: "claims that are not JSON", headers: vapidHeaders(token: jwt(claims: "{aud}")), expected: badClaims),
        CheckCase(name: "claims without aud", headers: vapidHeaders(token: jwt(claims: #"{"exp":1800003600}"#)),
                  expected: badClaims),
        CheckCase(name: "claims without exp", headers: vapidHeaders(token: jwt(claims: #"{"aud":"https://relay.example"}"#)),
                  expected: badClaims),
        CheckCase(name: "aud a number", headers: vapidHeaders(token: jwt(claims: claims(aud: "443"))), expected: badClaims),
        CheckCase(name: "aud a list (RFC 7519 allows one; RFC 8292 names one origin)",
                  headers: vapidHeaders(token: jwt(claims: claims(aud: #"["https://relay.example"]"#))), expected: badClaims),
        CheckCase(name: "exp a string", headers: vapidHeaders(token: jwt(claims: claims(exp: #""1800003600""#))),
                  expected: badClaims),
        CheckCase(name: "exp true", headers: vapidHeaders(token: jwt(claims: claims(exp: "true"))), expected: badClaims),
        CheckCase(name: "exp beyond any date", headers: vapidHeaders(token: jwt(claims: claims(exp: "1e300"))),
                  expected: badClaims),
        CheckCase(name: "a 63-byte signature", headers: vapidHeaders(token: jwt(signature: [UInt8](repeating: 1, count: 63))),
                  expected: signatureLength),
        CheckCase(name: "a DER signature (72 bytes)",
                  headers: vapidHeaders(token: jwt(signature: [0x30, 70] + [UInt8](repeating: 1, count: 70))),
                  expected: signatureLength),

        CheckCase(name: "signed by another key, which it names",
                  headers: vapidHeaders(token: jwt(signer: otherKey), key: otherKey), expected: keyMismatch),
        CheckCase(name: "signed by another key, naming the endpoint's", headers: vapidHeaders(token: jwt(signer: otherKey)),
                  expected: badSignature),
        CheckCase(name: "claims changed after signing",
                  headers: vapidHeaders(token: jwt(claims: claims(exp: "1800003601"),
                                                   signature: fakeSignature(key: serverKey, message: Array(jwt().split(separator: ".").prefix(2).joined(separator: ".").utf8)))),
                  expected: badSignature),
        CheckCase(name: "another key and another audience: the key decides",
                  headers: vapidHeaders(token: jwt(claims: claims(aud: #""https://other.example""#), signer: otherKey), key: otherKey),
                  expected: keyMismatch),
        CheckCase(name: "malformed claims and another key: the claims decide",
                  headers: vapidHeaders(token: jwt(claims: "[]", signer: otherKey), key: otherKey), expected: badClaims),

        CheckCase(name: "another host", headers: vapidHeaders(token: jwt(claims: claims(aud: #""https://other.example""#))),
                  expected: .unverifiable(.audience)),
        CheckCase(name: "another scheme", headers: vapidHeaders(token: jwt(claims: claims(aud: #""http://relay.example""#))),
                  expected: .unverifiable(.audience)),
        CheckCase(name: "another port", headers: vapidHeaders(token: jwt(claims: claims(aud: #""https://relay.example:8443""#))),
                  expected: .unverifiable(.audience)),
        CheckCase(name: "an aud that is not a URL", headers: vapidHeaders(token: jwt(claims: claims(aud: #""relay.example""#))),
                  expected: .unverifiable(.audience)),
        CheckCase(name: "exp now", headers: vapidHeaders(token: jwt(claims: claims(exp: "\(now)"))),
                  expected: .unverifiable(.expired)),
        CheckCase(name: "exp a day ago", headers: vapidHeaders(token: jwt(claims: claims(exp: "\(now - 86_400)"))),
                  expected: .unverifiable(.expired)),
        CheckCase(name: "exp one second past the window",
                  headers: vapidHeaders(token: jwt(claims: claims(exp: "\(lastAccepted + 1)"))), expected: .unverifiable(.tooFarAhead)),
        CheckCase(name: "exp far ahead", headers: vapidHeaders(token: jwt(claims: claims(exp: "9223372036854775807"))),
                  expected: .unverifiable(.tooFarAhead)),
        CheckCase(name: "exp far behind", headers: vapidHeaders(token: jwt(claims: claims(exp: "-9223372036854775808"))),
                  expected: .unverifiable(.expired)),
    ]

    @Test("checks a push to a restricted endpoint", arguments: cases)
    func checks(_ testCase: CheckCase) {
        let verdict = checkVAPID(testCase.headers, keyHash: fakeHash(serverKey), audience: audience, now: now,
                                 crypto: fakeCrypto)
        #expect(Expected(verdict) == testCase.expected)
    }

    @Test("every reason is one line and shows neither the JWT nor the key", arguments: cases)
    func reasons(_ testCase: CheckCase) {
        let verdict = checkVAPID(testCase.headers, keyHash: fakeHash(serverKey), audience: audience, now: now,
                                 crypto: fakeCrypto)
        let reason: String
        switch verdict {
        case .accepted: return
        case .unauthenticated(let text), .forbidden(let text), .unverifiable(_, let text): reason = text
        }
        #expect(!reason.isEmpty)
        #expect(!reason.contains("\n") && !reason.contains("\r"))
        for field in testCase.headers {
            for piece in field.value.split(whereSeparator: { " ,;=".contains($0) }) where piece.count > 16 {
                #expect(!reason.contains(piece), "the reason shows \(piece.prefix(20))…")
            }
        }
    }

    @Test("a 503 names what does not fit")
    func doubtReasons() {
        let aud = checkVAPID(vapidHeaders(token: jwt(claims: claims(aud: #""https://relay.example:8443""#))),
                             keyHash: fakeHash(serverKey), audience: audience + "/", now: now, crypto: fakeCrypto)
        #expect(aud == .unverifiable(.audience, "VAPID aud \"https://relay.example:8443\" is not \"https://relay.example\", "
            + "the origin this relay expects (a JWT for another push service, or the relay's origin setting is wrong)"))
        let expired = checkVAPID(vapidHeaders(token: jwt(claims: claims(exp: "\(now - 90)"))),
                                 keyHash: fakeHash(serverKey), audience: audience, now: now, crypto: fakeCrypto)
        #expect(expired == .unverifiable(.expired, "VAPID exp passed 90 s ago (a replay, or the relay's clock is ahead)"))
        let ahead = checkVAPID(vapidHeaders(token: jwt(claims: claims(exp: "\(now + 100_000)"))),
                               keyHash: fakeHash(serverKey), audience: audience, now: now, crypto: fakeCrypto)
        #expect(ahead == .unverifiable(.tooFarAhead,
                                       "VAPID exp is 100000 s ahead, more than 24 h and 300 s (RFC 8292 §2; or the relay's clock is behind)"))
    }

    @Test("an aud too long or odd to show is described, not shown")
    func oddAudience() {
        let long = "https://" + String(repeating: "a", count: 80) + ".example"
        let verdict = checkVAPID(vapidHeaders(token: jwt(claims: claims(aud: "\"\(long)\""))),
                                 keyHash: fakeHash(serverKey), audience: audience, now: now, crypto: fakeCrypto)
        guard case .unverifiable(.audience, let reason) = verdict else {
            Issue.record("not a 503 audience: \(verdict)")
            return
        }
        #expect(reason.hasPrefix("VAPID aud (96 bytes, not shown) is not"))
    }

    struct RealCase: Sendable, CustomTestStringConvertible {
        var form: String
        var audience: String
        var now: Int
        var expected: Expected
        var testDescription: String { "\(form) for \(audience) at \(now)" }
    }

    static let realCases: [RealCase] = ["vapid", "WebPush"].flatMap { form in [
        RealCase(form: form, audience: PyVAPID.audience, now: PyVAPID.expiry - 3600, expected: .accepted),
        RealCase(form: form, audience: "https://relay.example", now: PyVAPID.expiry - 3600, expected: .unverifiable(.audience)),
        RealCase(form: form, audience: PyVAPID.audience, now: PyVAPID.expiry, expected: .unverifiable(.expired)),
        RealCase(form: form, audience: PyVAPID.audience, now: PyVAPID.expiry - 86_400 - 301,
                 expected: .unverifiable(.tooFarAhead)),
    ] }

    @Test("checks py_vapid's real JWTs (their signatures as Python read them)", arguments: realCases)
    func realJWTs(_ testCase: RealCase) {
        let headers = testCase.form == "vapid" ? PyVAPID.vapid02 : PyVAPID.vapid01
        let verdict = checkVAPID(headers, keyHash: fakeHash(PyVAPID.key), audience: testCase.audience, now: testCase.now,
                                 crypto: PyVAPID.crypto)
        #expect(Expected(verdict) == testCase.expected)
        // Another endpoint's key hash: the same JWT is refused.
        let elsewhere = checkVAPID(headers, keyHash: fakeHash(serverKey), audience: testCase.audience, now: testCase.now,
                                   crypto: PyVAPID.crypto)
        #expect(Expected(elsewhere) == keyMismatch)
    }
}
