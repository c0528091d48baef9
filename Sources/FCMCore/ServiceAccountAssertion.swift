// The request for an access token: OAuth 2.0's JWT bearer grant (RFC 7523
// §2.1), as Google's service-account flow uses it. The assertion is a JWT
// (RFC 7519) signed with RS256 (RFC 7518 §3.3):
//
//   header {"alg":"RS256","typ":"JWT","kid":"<private_key_id>"}
//   claims {"iss":"<client_email>","scope":"https://www.googleapis.com/auth/firebase.messaging",
//           "aud":"<token_uri>","iat":<now>,"exp":<now + at most 3600>}
//
// Built here up to the signing input; the signature comes from outside
// (TLS's RS256Signer), so this stays free of keys and I/O.

import Base64URL
import JSON

/// The JWT an access token is asked for with, before and after signing.
public struct ServiceAccountAssertion: Sendable, Equatable {
    /// The scope FCM HTTP v1 needs.
    public static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Google takes assertions valid for at most an hour.
    public static let maxLifetimeSeconds = 3_600
    /// RFC 7523 §2.1's grant type.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// The request body's media type (RFC 6749 §4.1.3, Appendix B).
    public static let contentType = "application/x-www-form-urlencoded"

    /// `base64url(header) "." base64url(claims)`: what RS256 signs.
    public let signingInput: [UInt8]
    public let issuedAt: Int
    public let expiresAt: Int

    /// The assertion for `account`, issued at `issuedAt` (unix seconds), valid
    /// for `lifetimeSeconds`, which is held to 1 ... `maxLifetimeSeconds`.
    public init(account: FCMServiceAccount, issuedAt: Int, lifetimeSeconds: Int = maxLifetimeSeconds) {
        let lifetime = min(max(lifetimeSeconds, 1), Self.maxLifetimeSeconds)
        self.issuedAt = issuedAt
        expiresAt = issuedAt &+ lifetime
        var header: [UInt8] = []
        appendJSONObject([("alg", .string("RS256")), ("typ", .string("JWT")), ("kid", .string(account.privateKeyID))],
                         to: &header)
        var claims: [UInt8] = []
        appendJSONObject([
            ("iss", .string(account.clientEmail)), ("scope", .string(Self.firebaseMessagingScope)),
            ("aud", .string(account.tokenEndpoint.uri)),
            ("iat", .number(String(issuedAt))), ("exp", .number(String(expiresAt))),
        ], to: &claims)
        var input: [UInt8] = []
        input.reserveCapacity(base64Count(header.count, padded: false) + 1 + base64Count(claims.count, padded: false))
        forEachBase64URLDigit(of: header, padded: false) { input.append($0) }
        input.append(UInt8(ascii: "."))
        forEachBase64URLDigit(of: claims, padded: false) { input.append($0) }
        signingInput = input
    }

    /// The signed JWT: the signing input, ".", base64url(signature).
    public func jwt(signature: [UInt8]) -> [UInt8] {
        var jwt = signingInput
        jwt.reserveCapacity(signingInput.count + 1 + base64Count(signature.count, padded: false))
        jwt.append(UInt8(ascii: "."))
        forEachBase64URLDigit(of: signature, padded: false) { jwt.append($0) }
        return jwt
    }

    /// The token request's body with the signature `sign` makes of the
    /// signing input (RS256: TLS's `RS256Signer.sign`).
    public func tokenRequestBody<Failure: Error>(signedBy sign: ([UInt8]) throws(Failure) -> [UInt8])
        throws(Failure) -> [UInt8] {
        tokenRequestBody(signature: try sign(signingInput))
    }

    /// The token request's body (RFC 7523 §2.1, form-encoded):
    /// `grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=<jwt>`.
    public func tokenRequestBody(signature: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        appendFormField("grant_type", Array(Self.grantType.utf8), to: &body)
        body.append(UInt8(ascii: "&"))
        appendFormField("assertion", jwt(signature: signature), to: &body)
        return body
    }
}

/// `name=value`, both form-encoded: every byte but ALPHA, DIGIT and
/// `*-._` as %XX (the WHATWG URL standard's application/x-www-form-urlencoded
/// serializer; a JWT's digits and dots pass as they are).
func appendFormField(_ name: String, _ value: [UInt8], to output: inout [UInt8]) {
    appendFormEncoded(Array(name.utf8), to: &output)
    output.append(UInt8(ascii: "="))
    appendFormEncoded(value, to: &output)
}

private func appendFormEncoded(_ bytes: [UInt8], to output: inout [UInt8]) {
    let hex = Array("0123456789ABCDEF".utf8)
    for byte in bytes {
        if isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "*") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") {
            output.append(byte)
        } else if byte == UInt8(ascii: " ") {
            output.append(UInt8(ascii: "+"))
        } else {
            output.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
        }
    }
}
