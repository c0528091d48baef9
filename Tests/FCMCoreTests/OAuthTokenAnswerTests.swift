// The token endpoint's answers (RFC 6749 §5), Google's shapes first, and
// how long a token is kept.

import FCMCore
import Testing

@Suite("The token endpoint's answer")
struct OAuthTokenAnswerTests {
    static let googleToken = "ya29.c.b0AXv0zTPqR_example-Token.With~all+the/b64token=="

    @Test("a 200 with a bearer token is a token")
    func token() {
        let body = #"{"access_token":""# + Self.googleToken + #"","expires_in":3599,"token_type":"Bearer"}"#
        let answer = OAuthTokenAnswer(status: 200, body: Array(body.utf8))
        #expect(answer == .token(OAuthAccessToken(value: Self.googleToken, expiresInSeconds: 3599)))
        guard case .token(let token) = answer else { return }
        #expect(!token.description.contains("ya29"))
        #expect(token.description == "<access token, \(Self.googleToken.utf8.count) bytes, expires in 3599 s>")
    }

    @Test("token_type is case-insensitive, other members are ignored")
    func tokenVariants() {
        let body = #"{"token_type":"bearer","scope":"x","expires_in":60,"access_token":"abc","id_token":null}"#
        #expect(OAuthTokenAnswer(status: 200, body: Array(body.utf8))
            == .token(OAuthAccessToken(value: "abc", expiresInSeconds: 60)))
    }

    @Test("a 200 without a usable token is malformed", arguments: [
        ("", "a 200 whose body is not a JSON object"),
        ("<html>", "a 200 whose body is not a JSON object"),
        ("[]", "a 200 whose body is not a JSON object"),
        (#"{"expires_in":3599,"token_type":"Bearer"}"#, "a 200 without a string access_token"),
        (#"{"access_token":42,"expires_in":3599,"token_type":"Bearer"}"#, "a 200 without a string access_token"),
        (#"{"access_token":"","expires_in":3599,"token_type":"Bearer"}"#,
         "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)"),
        (#"{"access_token":"a b","expires_in":3599,"token_type":"Bearer"}"#,
         "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)"),
        (#"{"access_token":"a\r\nx-injected: 1","expires_in":3599,"token_type":"Bearer"}"#,
         "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)"),
        (#"{"access_token":"==","expires_in":3599,"token_type":"Bearer"}"#,
         "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)"),
        (#"{"access_token":"a=b","expires_in":3599,"token_type":"Bearer"}"#,
         "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)"),
        (#"{"access_token":"abc","expires_in":3599,"token_type":"MAC"}"#, "a 200 whose token_type is not Bearer"),
        (#"{"access_token":"abc","expires_in":3599}"#, "a 200 whose token_type is not Bearer"),
        (#"{"access_token":"abc","token_type":"Bearer"}"#, "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","expires_in":"3599","token_type":"Bearer"}"#, "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","expires_in":0,"token_type":"Bearer"}"#, "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","expires_in":-1,"token_type":"Bearer"}"#, "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","expires_in":3599.5,"token_type":"Bearer"}"#, "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","expires_in":1e3,"token_type":"Bearer"}"#, "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","expires_in":99999999999999999999999,"token_type":"Bearer"}"#,
         "a 200 without a positive whole expires_in"),
        (#"{"access_token":"abc","access_token":"def","expires_in":1,"token_type":"Bearer"}"#,
         "a 200 whose body is not a JSON object"),
    ])
    func malformedToken(body: String, reason: String) {
        #expect(OAuthTokenAnswer(status: 200, body: Array(body.utf8)) == .malformed(reason: reason))
    }

    @Test("a token longer than 4096 bytes is refused")
    func tokenTooLong() {
        let body = { (length: Int) in
            Array((#"{"access_token":""# + String(repeating: "a", count: length) + #"","expires_in":1,"token_type":"Bearer"}"#).utf8)
        }
        #expect(OAuthTokenAnswer(status: 200, body: body(4096)) == .token(OAuthAccessToken(value: String(repeating: "a", count: 4096),
                                                                                           expiresInSeconds: 1)))
        #expect(OAuthTokenAnswer(status: 200, body: body(4097))
            == .malformed(reason: "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)"))
    }

    @Test("error answers are refusals with their code", arguments: [
        // Google's, as its libraries report them.
        (400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
         OAuthRefusal(status: 400, code: .invalidGrant, errorDescription: "Invalid JWT Signature."), true),
        (400, "{\n  \"error\": \"invalid_grant\",\n  \"error_description\": \"Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.\"\n}",
         OAuthRefusal(status: 400, code: .invalidGrant, errorDescription:
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."),
         true),
        (400, #"{"error":"invalid_grant","error_description":"account not found"}"#,
         OAuthRefusal(status: 400, code: .invalidGrant, errorDescription: "account not found"), true),
        (401, #"{"error":"invalid_client","error_description":"The OAuth client was not found."}"#,
         OAuthRefusal(status: 401, code: .invalidClient, errorDescription: "The OAuth client was not found."), true),
        (401, #"{"error":"unauthorized_client"}"#, OAuthRefusal(status: 401, code: .unauthorizedClient), true),
        (400, #"{"error":"invalid_scope","error_description":"Invalid OAuth scope or ID token audience provided."}"#,
         OAuthRefusal(status: 400, code: .invalidScope, errorDescription: "Invalid OAuth scope or ID token audience provided."),
         false),
        (400, #"{"error":"invalid_request","error_description":"Invalid grant_type: "}"#,
         OAuthRefusal(status: 400, code: .invalidRequest, errorDescription: "Invalid grant_type: "), false),
        (400, #"{"error":"unsupported_grant_type"}"#, OAuthRefusal(status: 400, code: .unsupportedGrantType), false),
        (400, #"{"error":"slow_down","error_description":42}"#, OAuthRefusal(status: 400, code: .other("slow_down")), false),
        (503, #"{"error":"temporarily_unavailable"}"#, OAuthRefusal(status: 503, code: .other("temporarily_unavailable")), false),
    ] as [(Int, String, OAuthRefusal, Bool)])
    func refusal(status: Int, body: String, refusal: OAuthRefusal, rejectsAccount: Bool) {
        let answer = OAuthTokenAnswer(status: status, body: Array(body.utf8))
        #expect(answer == .refused(refusal))
        #expect(refusal.rejectsAccount == rejectsAccount)
    }

    @Test("a refusal's description is one line of quoted text")
    func refusalDescription() {
        #expect(OAuthRefusal(status: 400, code: .invalidGrant, errorDescription: "Invalid JWT Signature.").description
            == #"400 "invalid_grant" "Invalid JWT Signature.""#)
        #expect(OAuthRefusal(status: 400, code: .other("x\ny"), errorDescription: String(repeating: "d", count: 50)).description
            == #"400 "x?y" "dddddddddddddddddddddddddddddddddddddddd…""#)
    }

    @Test("other answers are unavailable or malformed", arguments: [
        (503, "<!DOCTYPE html><title>Error 503</title>", OAuthTokenAnswer.unavailable(status: 503)),
        (500, "", .unavailable(status: 500)),
        (502, #"{"error":{"code":502}}"#, .unavailable(status: 502)),
        (429, "Too Many Requests", .unavailable(status: 429)),
        (404, "<html>Not Found</html>", .malformed(reason: "HTTP 404 without an OAuth error")),
        (400, #"{"error_description":"no code"}"#, .malformed(reason: "HTTP 400 without an OAuth error")),
        (302, "", .malformed(reason: "HTTP 302 without an OAuth error")),
        (400, #"{"error":"invalid_grant""# + String(repeating: " ", count: 16_384) + "}",
         .malformed(reason: "HTTP 400 without an OAuth error")),
    ])
    func otherAnswers(status: Int, body: String, expected: OAuthTokenAnswer) {
        #expect(OAuthTokenAnswer(status: status, body: Array(body.utf8)) == expected)
    }

    @Test("a token is kept until five minutes before it expires, a short one for half its life", arguments: [
        (3599, 3299), (3600, 3300), (86_400, 86_100), (1_000_000, 86_100), (600, 300), (601, 301), (599, 300),
        (120, 60), (3, 2), (1, 1),
    ])
    func keepSeconds(expiresIn: Int, keep: Int) {
        #expect(OAuthAccessToken(value: "t", expiresInSeconds: expiresIn).keepSeconds == keep)
    }
}
