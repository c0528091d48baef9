// The token endpoint of Google's service-account flow, as the emulator
// plays it: OAuth 2.0's JWT bearer grant (RFC 7523 §2.1, §3) checked as
// Google checks it, against the accounts the emulator trusts. Pure: no
// I/O, no clock (the caller passes `now`).

import Base64URL
import FCMCore
import JSON

/// Checks one token request.
enum FCMTokenEndpoint {
    /// An `iat` this far ahead of the emulator's clock is still taken
    /// (the client's clock may run ahead a little).
    static let maxClockSkewSeconds = 60
    /// Google's words for an `iat`/`exp` pair it refuses.
    static let timeframeProblem = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
        + "timeframe. Check your iat and exp values in the JWT claim."
    static let badSignature = "Invalid JWT Signature."

    /// The account the request's assertion proves, or the refusal Google
    /// would send. `revokedKeyIDs`: keys the endpoint refuses as Google
    /// refuses a deleted key.
    static func validate(contentType: String?, body: [UInt8], accounts: [FCMTrustedAccount],
                         revokedKeyIDs: Set<String>, now: Int) -> Result<FCMTrustedAccount, FCMTokenRefusal> {
        guard let contentType, mediaType(contentType) == ServiceAccountAssertion.contentType else {
            return .failure(refusal(.invalidRequest, "Content-Type must be application/x-www-form-urlencoded"))
        }
        let form: [String: [UInt8]]
        switch FormBody.parse(body) {
        case .success(let fields): form = fields
        case .failure(let error): return .failure(refusal(.invalidRequest, error.reason))
        }
        guard let grantType = form["grant_type"] else {
            return .failure(refusal(.invalidRequest, "Missing required parameter: grant_type"))
        }
        guard grantType.elementsEqual(ServiceAccountAssertion.grantType.utf8) else {
            return .failure(refusal(.unsupportedGrantType,
                                    "Invalid grant_type: " + String(decoding: grantType, as: UTF8.self)))
        }
        guard let assertion = form["assertion"] else {
            return .failure(refusal(.invalidRequest, "Missing required parameter: assertion"))
        }
        return verify(assertion: assertion, accounts: accounts, revokedKeyIDs: revokedKeyIDs, now: now)
    }

    /// The JWT's header, signature and claims (RFC 7523 §3), in Google's order.
    static func verify(assertion: [UInt8], accounts: [FCMTrustedAccount], revokedKeyIDs: Set<String>,
                       now: Int) -> Result<FCMTrustedAccount, FCMTokenRefusal> {
        let parts = assertion.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = try? base64URLDecode(String(decoding: parts[0], as: UTF8.self)),
              let claimsBytes = try? base64URLDecode(String(decoding: parts[1], as: UTF8.self)),
              let signature = try? base64URLDecode(String(decoding: parts[2], as: UTF8.self)),
              let header = try? parseStrictJSON(headerBytes), case .object = header,
              let claims = try? parseStrictJSON(claimsBytes), case .object = claims
        else { return .failure(refusal(.invalidGrant, "Invalid JWT: not a signed JWT of three base64url parts")) }
        guard header["alg"] == .string("RS256") else {
            return .failure(refusal(.invalidGrant, "Invalid JWT: the algorithm must be RS256"))
        }
        guard case .string(let keyID)? = header["kid"] else {
            return .failure(refusal(.invalidGrant, "Invalid JWT: no kid in the header"))
        }
        guard let trusted = accounts.first(where: { $0.account.privateKeyID == keyID }) else {
            return .failure(FCMTokenRefusal(OAuthRefusal(status: 401, code: .invalidClient,
                                                         errorDescription: "The OAuth client was not found.")))
        }
        let signingInput = Array(assertion[..<parts[1].endIndex])
        guard !revokedKeyIDs.contains(keyID), trusted.verifier.verify(signingInput, signature: signature) else {
            return .failure(refusal(.invalidGrant, badSignature))
        }
        let account = trusted.account
        guard claims["iss"] == .string(account.clientEmail) else {
            return .failure(refusal(.invalidGrant, "Invalid JWT: iss is not the key's account"))
        }
        guard case .string(let scope)? = claims["scope"],
              scope.split(separator: " ").contains(Substring(ServiceAccountAssertion.firebaseMessagingScope)) else {
            return .failure(refusal(.invalidScope, "Invalid OAuth scope or ID token audience provided."))
        }
        guard claims["aud"] == .string(account.tokenEndpoint.uri) else {
            return .failure(refusal(.invalidGrant, "Invalid JWT: Failed audience check."))
        }
        guard let issuedAt = integer(claims["iat"]), let expiresAt = integer(claims["exp"]),
              issuedAt <= now + maxClockSkewSeconds, expiresAt > now, expiresAt > issuedAt,
              expiresAt - issuedAt <= ServiceAccountAssertion.maxLifetimeSeconds else {
            return .failure(refusal(.invalidGrant, timeframeProblem))
        }
        return .success(trusted)
    }

    /// The 200 answer (RFC 6749 §5.1).
    static func answer(accessToken: String, lifetime: Int) -> [UInt8] {
        var body: [UInt8] = []
        appendJSONObject([("access_token", .string(accessToken)), ("expires_in", .number(String(lifetime))),
                          ("token_type", .string("Bearer"))], to: &body)
        return body
    }

    private static func refusal(_ code: OAuthErrorCode, _ description: String) -> FCMTokenRefusal {
        FCMTokenRefusal(OAuthRefusal(status: 400, code: code, errorDescription: description))
    }

    /// A JSON number that is a whole number of seconds.
    private static func integer(_ value: JSONValue?) -> Int? {
        guard case .number(let text)? = value else { return nil }
        return Int(text)
    }

    /// The media type without parameters, lowercased (RFC 9110 §8.3.1).
    static func mediaType(_ contentType: String) -> String {
        let type = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingSpaces.lowercased()
    }
}

/// A refused token request: the answer RFC 6749 §5.2 describes.
struct FCMTokenRefusal: Error, Equatable {
    let refusal: OAuthRefusal

    init(_ refusal: OAuthRefusal) { self.refusal = refusal }

    var status: Int { refusal.status }

    /// `{"error":"…","error_description":"…"}`.
    var body: [UInt8] {
        var members: [(String, JSONValue)] = [("error", .string(refusal.code.text))]
        if let description = refusal.errorDescription { members.append(("error_description", .string(description))) }
        var body: [UInt8] = []
        appendJSONObject(members, to: &body)
        return body
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
