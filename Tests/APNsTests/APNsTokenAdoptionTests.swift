import APNs
import Base64URL
import TLS
import TestSupport
import Testing

/// A provider taking a token another signer of its key made (a fleet's
/// shared token): the token's form checked against the key, its age against
/// Apple's hour.
@Suite("APNs provider tokens adopted from another signer of the key")
struct APNsTokenAdoptionTests {
    static let now = 1_700_000_000

    static func provider(keyID: String = "KEY1234567", teamID: String = "TEAM765432",
                         now: Int = APNsTokenAdoptionTests.now) throws -> APNsTokenProvider {
        let signer = try ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8))
        return try APNsTokenProvider(signer: signer, keyID: keyID, teamID: teamID, now: now)
    }

    static func segment(_ text: String) -> String { base64URLEncode(Array(text.utf8)) }

    @Test("a token of the key's form is well formed, and every other form is not", arguments: [
        ("the key's own", "own", true),
        ("another key id", "otherKey", false),
        ("another team", "otherTeam", false),
        ("another iat than the one stored", "otherIat", false),
        ("two parts", "twoParts", false),
        ("a signature of 63 bytes", "shortSignature", false),
        ("a signature that is no base64url", "badSignature", false),
        ("header with spaces", "spacedHeader", false),
    ])
    func wellFormed(_ name: String, _ kind: String, _ expected: Bool) throws {
        let provider = try Self.provider()
        let other = try Self.provider(keyID: "KEY7654321")
        let otherTeam = try Self.provider(teamID: "TEAM000000")
        let issued = Self.now - 60
        let own = try #require(provider.sign(issuedAt: issued))
        let pieces = own.split(separator: ".").map(String.init)
        let token: String
        switch kind {
        case "own": token = own
        case "otherKey": token = try #require(other.sign(issuedAt: issued))
        case "otherTeam": token = try #require(otherTeam.sign(issuedAt: issued))
        case "otherIat": token = try #require(provider.sign(issuedAt: issued - 1))
        case "twoParts": token = pieces[0] + "." + pieces[1]
        case "shortSignature": token = pieces[0] + "." + pieces[1] + "." + base64URLEncode([UInt8](repeating: 1, count: 63))
        case "badSignature": token = pieces[0] + "." + pieces[1] + ".!!!!"
        case "spacedHeader":
            token = Self.segment(#"{"alg": "ES256","kid":"KEY1234567"}"#) + "." + pieces[1] + "." + pieces[2]
        default: preconditionFailure("unknown case \(kind)")
        }
        #expect(provider.isWellFormed(token, issuedAt: issued) == expected, "\(name)")
    }

    @Test("a young token of the key is adopted, sent from then on, and the one before kept as previous")
    func adoptsAYoungToken() throws {
        let provider = try Self.provider(now: Self.now - 600)
        let own = provider.inUse
        let shared = try #require(provider.sign(issuedAt: Self.now - 300))
        #expect(provider.adopt(token: shared, issuedAt: Self.now - 300, now: Self.now))
        #expect(provider.inUse.token == shared && provider.inUse.issuedAt == Self.now - 300)
        #expect(provider.token(now: Self.now) == shared)
        // APNs refusing the adopted one as an update too many goes back to the own one.
        provider.tokenUpdatesRefused(issuedAt: Self.now - 300, now: Self.now)
        #expect(provider.inUse.token == own.token)
        #expect(provider.isSigningHeld(now: Self.now))
        // ...and the refused token is not adopted again while signing is held.
        #expect(!provider.adopt(token: shared, issuedAt: Self.now - 300, now: Self.now + 5))
        #expect(provider.adopt(token: own.token, issuedAt: own.issuedAt, now: Self.now + 5))
    }

    @Test("tokens ahead of the clock, near their hour or not of the key are refused and change nothing",
          arguments: [
              (120, true),  // issued 2 minutes ahead
              (-(APNsTokenProvider.maximumAge - APNsTokenProvider.expiryMargin), true),  // at the margin
              (-2 * 3600, true),  // expired
              (-60, false),  // well formed but of another key
          ])
    func refused(offset: Int, ofTheKey: Bool) throws {
        let provider = try Self.provider()
        let before = provider.inUse
        let signer = ofTheKey ? provider : try Self.provider(keyID: "KEY7654321")
        let token = try #require(signer.sign(issuedAt: Self.now + offset))
        #expect(!provider.adopt(token: token, issuedAt: Self.now + offset, now: Self.now))
        #expect(provider.inUse == before)
    }
}
