// The token request: the JWT's header and claims as Google's
// service-account flow wants them, the signing input, the form body.

import Base64URL
import FCMCore
import JSON
import Testing

@Suite("The access token's request")
struct ServiceAccountAssertionTests {
    /// The JSON value of one base64url part of a JWT.
    func part(_ text: Substring) throws -> JSONValue {
        try parseStrictJSON(base64URLDecode(text))
    }

    @Test("the header and claims are Google's service-account assertion")
    func headerAndClaims() throws {
        let assertion = ServiceAccountAssertion(account: try consoleAccount(), issuedAt: 1_700_000_000)
        let parts = String(decoding: assertion.signingInput, as: UTF8.self).split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 2)
        #expect(try part(parts[0]) == .object([
            JSONMember(name: "alg", value: .string("RS256")), JSONMember(name: "typ", value: .string("JWT")),
            JSONMember(name: "kid", value: .string("0123456789abcdef0123456789abcdef01234567")),
        ]))
        #expect(try part(parts[1]) == .object([
            JSONMember(name: "iss", value: .string("firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com")),
            JSONMember(name: "scope", value: .string("https://www.googleapis.com/auth/firebase.messaging")),
            JSONMember(name: "aud", value: .string("https://oauth2.googleapis.com/token")),
            JSONMember(name: "iat", value: .number("1700000000")),
            JSONMember(name: "exp", value: .number("1700003600")),
        ]))
        #expect(!assertion.signingInput.contains(UInt8(ascii: "=")))
        #expect((assertion.issuedAt, assertion.expiresAt) == (1_700_000_000, 1_700_003_600))
    }

    @Test("the lifetime is held to one second ... one hour", arguments: [
        (3_600, 3_600), (60, 60), (1, 1), (0, 1), (-5, 1), (3_601, 3_600), (Int.max, 3_600),
    ])
    func lifetime(asked: Int, given: Int) throws {
        let assertion = ServiceAccountAssertion(account: try consoleAccount(), issuedAt: 1_000, lifetimeSeconds: asked)
        #expect(assertion.expiresAt - assertion.issuedAt == given)
    }

    @Test("aud is the file's token_uri as written")
    func audienceAsWritten() throws {
        let account = try readServiceAccount(serviceAccountJSON(replacing: ["token_uri": #""https://Emulator.test:8443/token""#]))
        let assertion = ServiceAccountAssertion(account: account, issuedAt: 0)
        let claims = try part(String(decoding: assertion.signingInput, as: UTF8.self).split(separator: ".")[1])
        #expect(claims["aud"] == .string("https://Emulator.test:8443/token"))
        #expect(account.tokenEndpoint.host == "emulator.test")
    }

    @Test("the body is the form-encoded grant type and the signed JWT")
    func body() throws {
        let assertion = ServiceAccountAssertion(account: try consoleAccount(), issuedAt: 1_700_000_000)
        let signature: [UInt8] = [0xFB, 0xFF, 0x00, 0x3E]
        let body = String(decoding: assertion.tokenRequestBody(signature: signature), as: UTF8.self)
        let jwt = String(decoding: assertion.signingInput, as: UTF8.self) + ".-_8APg"
        #expect(body == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + jwt)
        #expect(assertion.jwt(signature: signature) == Array(jwt.utf8))
        #expect(ServiceAccountAssertion.contentType == "application/x-www-form-urlencoded")
    }

    @Test("the injected signer signs the signing input, and its error comes through")
    func injectedSigner() throws {
        struct SignerDown: Error, Equatable {}
        let assertion = ServiceAccountAssertion(account: try consoleAccount(), issuedAt: 7)
        var signed: [UInt8] = []
        let body = try assertion.tokenRequestBody { (input: [UInt8]) throws(SignerDown) -> [UInt8] in
            signed = input
            return [1, 2, 3]
        }
        #expect(signed == assertion.signingInput)
        #expect(body == assertion.tokenRequestBody(signature: [1, 2, 3]))
        #expect(throws: SignerDown()) {
            try assertion.tokenRequestBody { (_: [UInt8]) throws(SignerDown) -> [UInt8] in throw SignerDown() }
        }
    }
}
