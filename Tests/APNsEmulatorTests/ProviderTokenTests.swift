import Glibc
import RelayCore
import Testing
import TestSupport
import TLS
@testable import APNsEmulator

@Suite("Provider token verification")
struct ProviderTokenTests {
    static func verifier() throws -> ProviderTokenVerifier {
        ProviderTokenVerifier(
            verifier: try ES256Verifier(publicKeyPEM: TestCertificates.bytes(TestCertificates.authKeyPublic)),
            keyID: Fixture.keyID, teamID: Fixture.teamID)
    }

    @Test("a valid token gives its team; its age is re-checked on every use of the cached verdict")
    func validThenExpires() throws {
        let verifier = try Self.verifier()
        let issued = 1_800_000_000
        let token = "bearer " + (try Fixture.providerToken(issuedAt: issued))
        #expect(verifier.verify(authorization: token, now: issued + 10) == .success(Fixture.teamID))
        #expect(verifier.verify(authorization: token, now: issued + 3600) == .success(Fixture.teamID))
        #expect(verifier.verify(authorization: token, now: issued + 3601) == .failure(APNsRejection(.expiredProviderToken)))
        // Far in the future (clock skew beyond 5 minutes): not believable.
        #expect(verifier.verify(authorization: token, now: issued - 301) == .failure(APNsRejection(.invalidProviderToken)))
        #expect(verifier.verify(authorization: "Bearer " + token.dropFirst(7), now: issued) == .success(Fixture.teamID))
    }

    @Test("malformed or foreign tokens are 403 InvalidProviderToken", arguments: [
        "bearer", "bearer ", "basic abc", "bearer a.b", "bearer a.b.c.d", "bearer !!!.###.$$$",
        "bearer eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.AAAA",
    ])
    func malformed(authorization: String) throws {
        #expect(try Self.verifier().verify(authorization: authorization, now: Int(time(nil)))
            == .failure(APNsRejection(.invalidProviderToken)))
    }

    @Test("wrong kid, wrong team, wrong algorithm or a corrupted signature are refused")
    func wrongClaims() throws {
        let verifier = try Self.verifier()
        let now = Int(time(nil))
        for token in [
            try Fixture.providerToken(keyID: "ANOTHERKEY"), try Fixture.providerToken(teamID: "ANOTHERTEAM"),
            try Fixture.providerToken(corruptSignature: true),
        ] {
            #expect(verifier.verify(authorization: "bearer " + token, now: now) == .failure(APNsRejection(.invalidProviderToken)))
        }
        // A well-signed token whose header says HS256.
        let header = base64URLEncode(Array(#"{"alg":"HS256","kid":"\#(Fixture.keyID)"}"#.utf8))
        let claims = base64URLEncode(Array(#"{"iss":"\#(Fixture.teamID)","iat":\#(now)}"#.utf8))
        let signer = try ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8))
        let signature = base64URLEncode(try signer.sign(Array("\(header).\(claims)".utf8)))
        #expect(verifier.verify(authorization: "bearer \(header).\(claims).\(signature)", now: now)
            == .failure(APNsRejection(.invalidProviderToken)))
    }
}
