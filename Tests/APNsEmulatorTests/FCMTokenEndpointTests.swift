@testable import APNsEmulator
import FCMCore
import JSON
import Testing

@Suite("FCM token endpoint")
struct FCMTokenEndpointTests {
    static let now = 1_800_000_000
    static let form = "application/x-www-form-urlencoded"

    /// What one request changes from a valid one, and the refusal it gets.
    struct Refusal: CustomTestStringConvertible, Sendable {
        var name: String
        var contentType: String? = FCMTokenEndpointTests.form
        var header: [String: JSONValue?] = [:]
        var claims: [String: JSONValue?] = [:]
        var grantType = ServiceAccountAssertion.grantType
        var corruptSignature = false
        var body: String? = nil
        var revoked: Set<String> = []
        var status = 400
        var error: String
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal(name: "a JSON body", contentType: "application/json", error: "invalid_request"),
        Refusal(name: "no content-type", contentType: nil, error: "invalid_request"),
        Refusal(name: "no grant_type", body: "assertion=abc", error: "invalid_request"),
        Refusal(name: "another grant_type", grantType: "client_credentials", error: "unsupported_grant_type"),
        Refusal(name: "no assertion", body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer",
                error: "invalid_request"),
        Refusal(name: "a parameter twice", body: "grant_type=a&grant_type=b", error: "invalid_request"),
        Refusal(name: "a broken escape", body: "grant_type=%3", error: "invalid_request"),
        Refusal(name: "an assertion that is no JWT",
                body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=abc.def",
                error: "invalid_grant"),
        Refusal(name: "alg HS256", header: ["alg": .string("HS256")], error: "invalid_grant"),
        Refusal(name: "no kid", header: ["kid": nil], error: "invalid_grant"),
        Refusal(name: "an unknown kid", header: ["kid": .string("ffffffffffffffffffffffffffffffffffffffff")],
                status: 401, error: "invalid_client"),
        Refusal(name: "a revoked kid", revoked: [FCMFixture.keyID], error: "invalid_grant"),
        Refusal(name: "a bad signature", corruptSignature: true, error: "invalid_grant"),
        Refusal(name: "iss of another account", claims: ["iss": .string("other@example.iam.gserviceaccount.com")],
                error: "invalid_grant"),
        Refusal(name: "no scope", claims: ["scope": nil], error: "invalid_scope"),
        Refusal(name: "another scope", claims: ["scope": .string("https://www.googleapis.com/auth/cloud-platform")],
                error: "invalid_scope"),
        Refusal(name: "aud Google's endpoint", claims: ["aud": .string("https://oauth2.googleapis.com/token")],
                error: "invalid_grant"),
        Refusal(name: "iat in the future", claims: ["iat": .number(String(now + 120)), "exp": .number(String(now + 600))],
                error: "invalid_grant"),
        Refusal(name: "expired", claims: ["iat": .number(String(now - 4000)), "exp": .number(String(now - 400))],
                error: "invalid_grant"),
        Refusal(name: "valid for more than an hour", claims: ["exp": .number(String(now + 3601))], error: "invalid_grant"),
        Refusal(name: "exp before iat", claims: ["iat": .number(String(now)), "exp": .number(String(now - 1))],
                error: "invalid_grant"),
        Refusal(name: "iat not a number", claims: ["iat": .string("now")], error: "invalid_grant"),
    ]

    static func request(_ refusal: Refusal) throws -> (contentType: String?, body: [UInt8]) {
        if let body = refusal.body { return (refusal.contentType, Array(body.utf8)) }
        let jwt = try FCMFixture.assertion(for: FCMFixture.account(), now: now, header: refusal.header,
                                           claims: refusal.claims, corruptSignature: refusal.corruptSignature)
        return (refusal.contentType, FCMFixture.tokenRequestBody(jwt, grantType: refusal.grantType))
    }

    @Test("each refusal Google makes, with its OAuth error", arguments: refusals)
    func refusal(_ refusal: Refusal) throws {
        let (contentType, body) = try Self.request(refusal)
        let result = FCMTokenEndpoint.validate(contentType: contentType, body: body, accounts: [try FCMFixture.trusted()],
                                               revokedKeyIDs: refusal.revoked, now: Self.now)
        guard case .failure(let refused) = result else {
            Issue.record("accepted")
            return
        }
        #expect(refused.status == refusal.status)
        #expect(refused.refusal.code.text == refusal.error)
        // The body is what FCMCore reads of Google's.
        #expect(OAuthTokenAnswer(status: refused.status, body: refused.body) == .refused(refused.refusal))
    }

    @Test("a valid assertion proves its account; the clock may run a minute ahead")
    func success() throws {
        let accounts = [try FCMFixture.trusted(keyID: "aaaa"), try FCMFixture.trusted()]
        for issuedAt in [Self.now, Self.now + 60, Self.now - 3000] {
            let jwt = try FCMFixture.assertion(for: FCMFixture.account(), now: issuedAt)
            let result = FCMTokenEndpoint.validate(contentType: "application/x-www-form-urlencoded; charset=utf-8",
                                                   body: FCMFixture.tokenRequestBody(jwt), accounts: accounts,
                                                   revokedKeyIDs: ["aaaa"], now: Self.now)
            #expect((try? result.get())?.account.privateKeyID == FCMFixture.keyID, "iat \(issuedAt)")
        }
    }

    @Test("FCMCore's own request is taken, and the answer reads as a token")
    func relaysRequest() throws {
        let account = try FCMFixture.account()
        let assertion = ServiceAccountAssertion(account: account, issuedAt: Self.now)
        let signer = try FCMFixture.signer()
        let body = try assertion.tokenRequestBody(signedBy: signer.sign)
        let result = FCMTokenEndpoint.validate(contentType: ServiceAccountAssertion.contentType, body: body,
                                               accounts: [try FCMFixture.trusted()], revokedKeyIDs: [], now: Self.now)
        #expect((try? result.get()) != nil)
        let answer = OAuthTokenAnswer(status: 200, body: FCMTokenEndpoint.answer(accessToken: "ya29.abc", lifetime: 42))
        #expect(answer == .token(OAuthAccessToken(value: "ya29.abc", expiresInSeconds: 42)))
    }

    @Test("issued tokens are kept with their account until they expire")
    func issuedTokens() throws {
        let tokens = FCMIssuedTokens()
        let account = try FCMFixture.trusted()
        var generator = SystemRandomNumberGenerator()
        let first = tokens.issue(for: account, now: Self.now, lifetime: 10, using: &generator)
        let second = tokens.issue(for: account, now: Self.now, lifetime: 10, using: &generator)
        #expect(first != second)
        #expect(first.hasPrefix("ya29."))
        #expect(tokens.grant(for: first, now: Self.now + 9)?.account === account)
        #expect(tokens.grant(for: first, now: Self.now + 10) == nil)
        #expect(tokens.grant(for: "ya29.unknown", now: Self.now) == nil)
    }
}
