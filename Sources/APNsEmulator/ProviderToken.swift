import Foundation
import RelayCore
import TLS

/// Checks APNs provider tokens (Apple: "Establishing a token-based connection
/// to APNs"): `authorization: bearer <JWT>`, header `{"alg":"ES256","kid":…}`,
/// claims `{"iss":<team id>,"iat":<unix seconds>}`, ES256 signature.
///
/// A token's signature is checked once; the result is cached by the exact
/// header value, so a request costs one dictionary lookup plus the age check
/// (a token older than an hour is 403 ExpiredProviderToken, re-checked on
/// every request). One verifier per loop thread: no locking.
final class ProviderTokenVerifier {
    /// Apple refuses tokens older than one hour.
    static let maximumAge = 3600
    /// Clock skew tolerated for an `iat` in the future.
    static let maximumFutureSkew = 300
    /// Bounded memory: the cache is emptied when it reaches this size.
    static let cacheLimit = 4096

    private let verifier: ES256Verifier
    private let keyID: String
    private let teamID: String

    private enum Verdict {
        case valid(issuedAt: Int)
        case invalid
    }

    private var cache: [String: Verdict] = [:]

    init(verifier: ES256Verifier, keyID: String, teamID: String) {
        self.verifier = verifier
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The token's issuer (team id) or the 403 rejection.
    func verify(authorization: String, now: Int) -> Result<String, APNsRejection> {
        let verdict: Verdict
        if let cached = cache[authorization] {
            verdict = cached
        } else {
            verdict = check(authorization)
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[authorization] = verdict
        }
        switch verdict {
        case .invalid:
            return .failure(APNsRejection(.invalidProviderToken))
        case .valid(let issuedAt):
            if issuedAt > now + Self.maximumFutureSkew { return .failure(APNsRejection(.invalidProviderToken)) }
            if now - issuedAt > Self.maximumAge { return .failure(APNsRejection(.expiredProviderToken)) }
            return .success(teamID)
        }
    }

    private func check(_ authorization: String) -> Verdict {
        let scheme = "bearer "
        guard authorization.utf8.count > scheme.utf8.count,
              authorization.prefix(scheme.count).lowercased() == scheme else { return .invalid }
        let token = authorization.dropFirst(scheme.count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = try? base64URLDecode(parts[0]),
              let claimsBytes = try? base64URLDecode(parts[1]),
              let signature = try? base64URLDecode(parts[2]),
              let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: Data(claimsBytes))) as? [String: Any]
        else { return .invalid }
        guard header["alg"] as? String == "ES256", header["kid"] as? String == keyID,
              claims["iss"] as? String == teamID,
              let issuedAt = (claims["iat"] as? NSNumber)?.intValue else { return .invalid }
        let signedPart = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard verifier.verify(signedPart, signature: signature) else { return .invalid }
        return .valid(issuedAt: issuedAt)
    }
}
