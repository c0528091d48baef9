import APNsCore
@testable import APNsEmulator
import Base64URL
import Glibc
import TLS
import TestSupport
import Testing

@Suite("Provider token verification")
struct ProviderTokenTests {
    static func verifier(_ keys: [TestKeys.Key] = [TestKeys.team],
                         environment: APNsEnvironment = .production) throws -> EmulatorTokenVerifier {
        EmulatorTokenVerifier(keys: try LoadedProviderKey.load(keys.map { try $0.configured() }),
                              environment: environment)
    }

    /// The key id a verification gave, or its rejection.
    static func outcome(_ result: Result<EmulatorTokenVerifier.Verified, ProviderTokenRefusal>) -> Result<String, APNsRejection> {
        result.map { $0.key.keyID }.mapError { APNsRejection($0.reason) }
    }

    @Test("a valid token gives its team; its age is re-checked on every use of the cached verdict")
    func validThenExpires() throws {
        let verifier = try Self.verifier()
        let issued = 1_800_000_000
        let token = "bearer " + (try Fixture.providerToken(issuedAt: issued))
        #expect(Self.outcome(verifier.verify(authorization: token, now: issued + 10)) == .success(Fixture.keyID))
        #expect(Self.outcome(verifier.verify(authorization: token, now: issued + 3600)) == .success(Fixture.keyID))
        #expect(Self.outcome(verifier.verify(authorization: token, now: issued + 3601))
            == .failure(APNsRejection(.expiredProviderToken)))
        // Far in the future (clock skew beyond 5 minutes): not believable.
        #expect(Self.outcome(verifier.verify(authorization: token, now: issued - 301))
            == .failure(APNsRejection(.invalidProviderToken)))
        #expect(Self.outcome(verifier.verify(authorization: "Bearer " + token.dropFirst(7), now: issued))
            == .success(Fixture.keyID))
    }

    @Test("malformed or foreign tokens are 403 InvalidProviderToken", arguments: [
        "bearer", "bearer ", "basic abc", "bearer a.b", "bearer a.b.c.d", "bearer !!!.###.$$$",
        "bearer eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.AAAA",
    ])
    func malformed(authorization: String) throws {
        #expect(Self.outcome(try Self.verifier().verify(authorization: authorization, now: Int(time(nil))))
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
            #expect(Self.outcome(verifier.verify(authorization: "bearer " + token, now: now))
                == .failure(APNsRejection(.invalidProviderToken)))
        }
        // A well-signed token whose header says HS256.
        let header = base64URLEncode(Array(#"{"alg":"HS256","kid":"\#(Fixture.keyID)"}"#.utf8))
        let claims = base64URLEncode(Array(#"{"iss":"\#(Fixture.teamID)","iat":\#(now)}"#.utf8))
        let signer = try ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8))
        let signature = base64URLEncode(try signer.sign(Array("\(header).\(claims)".utf8)))
        #expect(Self.outcome(verifier.verify(authorization: "bearer \(header).\(claims).\(signature)", now: now))
            == .failure(APNsRejection(.invalidProviderToken)))
    }

    @Test("each of several keys verifies its own tokens; a key's scope to one environment is part of the cached verdict")
    func severalKeys() throws {
        let keys = [TestKeys.team, TestKeys.otherTeam, TestKeys.sandbox, TestKeys.topicKey]
        let production = try Self.verifier(keys, environment: .production)
        let development = try Self.verifier(keys, environment: .development)
        let now = Int(time(nil))
        for key in keys {
            let token = "bearer " + (try key.token(issuedAt: now))
            for (verifier, environment) in [(production, APNsEnvironment.production), (development, .development)] {
                let expected: Result<String, APNsRejection> = key.environments.contains(environment)
                    ? .success(key.keyID) : .failure(.keyForOtherEnvironment)
                // Twice: the second answer comes from the cache and must agree.
                #expect(Self.outcome(verifier.verify(authorization: token, now: now)) == expected, "\(key.keyID)")
                #expect(Self.outcome(verifier.verify(authorization: token, now: now + 1)) == expected, "\(key.keyID)")
            }
        }
        // The verified key carries what the per-request checks need.
        let topicToken = "bearer " + (try TestKeys.topicKey.token(issuedAt: now))
        let verified = try production.verify(authorization: topicToken, now: now).get().key
        #expect(verified.teamID == Fixture.teamID)
        #expect(verified.covers(topic: TestKeys.secondTopic))
        #expect(!verified.covers(topic: Fixture.topic))
        let teamToken = "bearer " + (try TestKeys.team.token(issuedAt: now))
        #expect(try production.verify(authorization: teamToken, now: now).get().key.covers(topic: "com.example.any"))
    }
}
