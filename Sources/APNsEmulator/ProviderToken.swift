import APNsCore
import Base64URL
import Foundation
import TLS

/// Checks APNs provider tokens (Apple: "Establishing a token-based connection
/// to APNs"): `authorization: bearer <JWT>`, header `{"alg":"ES256","kid":…}`,
/// claims `{"iss":<team id>,"iat":<unix seconds>}`, ES256 signature, against
/// several provider keys (several apps, teams and scoped keys).
///
/// A token's signature is checked once; the verdict is cached by the exact
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

    /// What a verified token says about its key, for the per-request checks
    /// (the topic) and the record.
    final class VerifiedKey {
        let keyID: String
        let teamID: String
        /// nil: a team key (any topic).
        let topics: Set<String>?
        fileprivate let verifier: ES256Verifier
        fileprivate let validHere: Bool

        fileprivate init(_ loaded: LoadedProviderKey, environment: APNsEnvironment) {
            keyID = loaded.key.keyID
            teamID = loaded.key.teamID
            topics = loaded.key.topics
            verifier = loaded.verifier
            validHere = loaded.key.environments.contains(environment)
        }

        /// Whether the key may sign notifications for `topic`.
        func covers(topic: String) -> Bool {
            topics?.contains(topic) ?? true
        }
    }

    /// A token that passed: its key and its `iat`.
    struct VerifiedToken {
        let key: VerifiedKey
        let issuedAt: Int
    }

    private enum Verdict {
        case valid(issuedAt: Int, key: VerifiedKey)
        case rejected(APNsRejection)
    }

    private let keys: [String: VerifiedKey]
    private var cache: [String: Verdict] = [:]

    /// `environment`: the one the emulator plays; a key scoped to the other
    /// one is refused.
    init(keys: [LoadedProviderKey], environment: APNsEnvironment) {
        var byID: [String: VerifiedKey] = [:]
        for key in keys { byID[key.key.keyID] = VerifiedKey(key, environment: environment) }
        self.keys = byID
    }

    /// The token's key and `iat`, or the 403 rejection.
    func verify(authorization: String, now: Int) -> Result<VerifiedToken, APNsRejection> {
        let verdict: Verdict
        if let cached = cache[authorization] {
            verdict = cached
        } else {
            verdict = check(authorization)
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[authorization] = verdict
        }
        switch verdict {
        case .rejected(let rejection):
            return .failure(rejection)
        case .valid(let issuedAt, let key):
            if issuedAt > now + Self.maximumFutureSkew { return .failure(APNsRejection(.invalidProviderToken)) }
            if now - issuedAt > Self.maximumAge { return .failure(APNsRejection(.expiredProviderToken)) }
            return .success(VerifiedToken(key: key, issuedAt: issuedAt))
        }
    }

    /// An unknown `kid`, an `iss` that is not the key's team and a signature
    /// that does not verify are all 403 InvalidProviderToken: Apple's table
    /// has that one reason for a token that is not valid or whose signature
    /// cannot be verified.
    private func check(_ authorization: String) -> Verdict {
        let invalid = Verdict.rejected(APNsRejection(.invalidProviderToken))
        let scheme = "bearer "
        guard authorization.utf8.count > scheme.utf8.count,
              authorization.prefix(scheme.count).lowercased() == scheme else { return invalid }
        let token = authorization.dropFirst(scheme.count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = try? base64URLDecode(parts[0]),
              let claimsBytes = try? base64URLDecode(parts[1]),
              let signature = try? base64URLDecode(parts[2]),
              let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: Data(claimsBytes))) as? [String: Any]
        else { return invalid }
        guard header["alg"] as? String == "ES256", let keyID = header["kid"] as? String, let key = keys[keyID],
              claims["iss"] as? String == key.teamID,
              let issuedAt = (claims["iat"] as? NSNumber)?.intValue else { return invalid }
        let signedPart = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.verifier.verify(signedPart, signature: signature) else { return invalid }
        // Only a token that proves its key learns that the key is for the
        // other environment; anything else learns nothing about the keys.
        guard key.validHere else { return .rejected(.keyForOtherEnvironment) }
        return .valid(issuedAt: issuedAt, key: key)
    }
}
