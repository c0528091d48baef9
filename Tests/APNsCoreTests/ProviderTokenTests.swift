// The one reading of an APNs provider token and its verdict (the signature
// check injected: here a stand-in that accepts one signature per key).

@testable import APNsCore
import Base64URL
import Testing

/// A key whose "signature" of a message is the key id's bytes: enough to
/// tell a signature by this key from another's without OpenSSL.
final class StandInKey: ProviderTokenKey {
    let keyID: String
    let teamID: String
    init(_ keyID: String, team: String) { (self.keyID, self.teamID) = (keyID, team) }
    func verifies(_ signingInput: [UInt8], signature: [UInt8]) -> Bool { signature == Array(keyID.utf8) }
}

func bearer(header: String, claims: String, signature: [UInt8]) -> String {
    "bearer \(base64URLEncode(Array(header.utf8))).\(base64URLEncode(Array(claims.utf8))).\(base64URLEncode(signature))"
}

func standInToken(kid: String = "KEY1", team: String = "TEAM1", iat: Int = 1_800_000_000,
                  signedBy: String? = nil, alg: String = "ES256") -> String {
    bearer(header: #"{"alg":"\#(alg)","kid":"\#(kid)"}"#, claims: #"{"iss":"\#(team)","iat":\#(iat)}"#,
           signature: Array((signedBy ?? kid).utf8))
}

@Suite("Provider token (APNsCore)")
struct ProviderTokenCoreTests {
    @Test("a token is read: kid, iss, iat, the signing input and the signature; the scheme in any case")
    func reads() throws {
        let text = standInToken()
        let token = try #require(ProviderToken(authorization: text))
        #expect(token.keyID == "KEY1")
        #expect(token.issuer == "TEAM1")
        #expect(token.issuedAt == 1_800_000_000)
        let parts = text.dropFirst("bearer ".count).split(separator: ".")
        #expect(token.signingInput == Array("\(parts[0]).\(parts[1])".utf8))
        #expect(token.signature == Array("KEY1".utf8))
        #expect(ProviderToken(authorization: "Bearer " + text.dropFirst(7)) != nil)
        #expect(ProviderToken(authorization: "BEARER " + text.dropFirst(7)) != nil)
    }

    @Test("what is not a provider token is not read", arguments: [
        "", "bearer", "bearer ", "basic abc", "bearer a.b", "bearer a.b.c.d", "bearer !!!.###.$$$",
        standInToken(alg: "HS256"), standInToken(alg: "none"),
        bearer(header: #"{"alg":"ES256"}"#, claims: #"{"iss":"T","iat":1}"#, signature: [1]),
        bearer(header: #"{"alg":"ES256","kid":7}"#, claims: #"{"iss":"T","iat":1}"#, signature: [1]),
        bearer(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iat":1}"#, signature: [1]),
        bearer(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iss":"T"}"#, signature: [1]),
        bearer(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iss":"T","iat":"1"}"#, signature: [1]),
        bearer(header: #"{"alg":"ES256","kid":"K"}"#, claims: #"{"iss":"T","iat":1.5}"#, signature: [1]),
        bearer(header: #"{"alg":"ES256","kid":"K","kid":"L"}"#, claims: #"{"iss":"T","iat":1}"#, signature: [1]),
        bearer(header: #"["ES256"]"#, claims: #"{"iss":"T","iat":1}"#, signature: [1]),
    ])
    func unreadable(authorization: String) {
        #expect(ProviderToken(authorization: authorization) == nil)
    }

    @Test("the age: an hour is fine, a second more is ExpiredProviderToken, five minutes ahead is tolerated",
          arguments: [
              (0, nil), (3600, nil), (3601, APNsReason.expiredProviderToken), (-300, nil),
              (-301, .invalidProviderToken),
          ] as [(Int, APNsReason?)])
    func age(elapsed: Int, expected: APNsReason?) {
        #expect(ProviderToken.ageRefusal(issuedAt: 1_000_000, now: 1_000_000 + elapsed) == expected)
    }

    @Test("the verifier: each refusal is APNs' reason; the cached verdict's age is re-checked")
    func verifier() {
        let verifier = ProviderTokenVerifier(keys: [StandInKey("KEY1", team: "TEAM1"), StandInKey("KEY2", team: "TEAM2")])
        let now = 1_800_000_000
        let cases: [(String, Result<String, ProviderTokenRefusal>)] = [
            (standInToken(), .success("KEY1")),
            (standInToken(kid: "KEY2", team: "TEAM2"), .success("KEY2")),
            (standInToken(kid: "NOKEY"), .failure(ProviderTokenRefusal(.invalidProviderToken))),
            (standInToken(team: "TEAM2"), .failure(ProviderTokenRefusal(.invalidProviderToken))),
            (standInToken(signedBy: "KEY2"), .failure(ProviderTokenRefusal(.invalidProviderToken))),
            ("bearer x.y.z", .failure(ProviderTokenRefusal(.invalidProviderToken))),
            (standInToken(iat: now - 3601), .failure(ProviderTokenRefusal(.expiredProviderToken))),
        ]
        for (token, expected) in cases {
            for _ in 0..<2 {  // the second answer comes from the cache
                #expect(verifier.verify(authorization: token, now: now).map(\.key.keyID) == expected, "\(token)")
            }
        }
        #expect(verifier.verify(authorization: standInToken(), now: now + 3601).map(\.key.keyID)
            == .failure(ProviderTokenRefusal(.expiredProviderToken)))
    }

    @Test("a key's own refusal comes only for a token that proves the key")
    func keyRefusal() {
        let verifier = ProviderTokenVerifier(keys: [StandInKey("KEY1", team: "TEAM1")]) { _ in .badEnvironmentKeyInToken }
        #expect(verifier.verify(authorization: standInToken(), now: 1_800_000_000).map(\.key.keyID)
            == .failure(ProviderTokenRefusal(.badEnvironmentKeyInToken)))
        #expect(verifier.verify(authorization: standInToken(signedBy: "OTHER"), now: 1_800_000_000).map(\.key.keyID)
            == .failure(ProviderTokenRefusal(.invalidProviderToken)))
    }
}
