// An APNs provider token (Apple: "Establishing a token-based connection to
// APNs"): `authorization: bearer <JWT>`, header `{"alg":"ES256","kid":…}`,
// claims `{"iss":<team id>,"iat":<unix seconds>}`, an ES256 signature. The
// one reading of it and the one verdict on it, for the APNs emulator and for
// the relay's `/3/device/` alike. Pure: the signature check is injected
// (each key brings TLS's ES256 verifier), the clock is a parameter.

import Base64URL
import JSON

/// A provider token, read but not yet believed: what it claims and the
/// bytes its signature covers.
public struct ProviderToken: Sendable, Equatable {
    /// The header's `kid`: which key signed it.
    public var keyID: String
    /// The claims' `iss`: the team the key belongs to.
    public var issuer: String
    /// The claims' `iat`, unix seconds.
    public var issuedAt: Int
    /// `base64url(header).base64url(claims)`, the JWS signing input (RFC 7515 §5.1).
    public var signingInput: [UInt8]
    /// r‖s, 64 bytes for a well-formed ES256 signature (RFC 7518 §3.4).
    public var signature: [UInt8]

    /// Reads the `authorization` field's value: `bearer` (any case) and one
    /// space, then three base64url parts; the header an object with `alg`
    /// `ES256` and a string `kid`, the claims an object with a string `iss`
    /// and an integer `iat`. nil for anything else: APNs answers all of it
    /// 403 InvalidProviderToken, its one reason for a token it cannot use.
    public init?(authorization: String) {
        let scheme = "bearer "
        let bytes = Array(authorization.utf8)
        guard bytes.count > scheme.utf8.count,
              String(decoding: bytes.prefix(scheme.utf8.count), as: UTF8.self).lowercased() == scheme else { return nil }
        let token = bytes[scheme.utf8.count...]
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = try? base64URLDecode(String(decoding: parts[0], as: UTF8.self)),
              let claimsBytes = try? base64URLDecode(String(decoding: parts[1], as: UTF8.self)),
              let signature = try? base64URLDecode(String(decoding: parts[2], as: UTF8.self)),
              let header = try? parseStrictJSON(headerBytes),
              let claims = try? parseStrictJSON(claimsBytes)
        else { return nil }
        guard case .string("ES256")? = header["alg"], case .string(let keyID)? = header["kid"],
              case .string(let issuer)? = claims["iss"], case .number(let iat)? = claims["iat"],
              let issuedAt = Int(iat) else { return nil }
        self.keyID = keyID
        self.issuer = issuer
        self.issuedAt = issuedAt
        self.signingInput = Array(token.prefix(parts[0].count + 1 + parts[1].count))
        self.signature = signature
    }

    /// APNs refuses a token issued more than an hour ago (403
    /// ExpiredProviderToken: "The provider token is stale and a new token
    /// should be generated").
    public static let maximumAge = 3600
    /// Clock skew tolerated for an `iat` in the future; beyond it the token is
    /// not believable (403 InvalidProviderToken: Apple documents no reason
    /// for a future `iat`, and a client renews on that one).
    public static let maximumFutureSkew = 300

    /// The verdict on a token's age at `now` (unix seconds): nil when it is
    /// usable, else APNs' reason.
    public static func ageRefusal(issuedAt: Int, now: Int) -> APNsReason? {
        if issuedAt > now + maximumFutureSkew { return .invalidProviderToken }
        if now - issuedAt > maximumAge { return .expiredProviderToken }
        return nil
    }
}

/// Why a provider token is refused: APNs' 403 reason.
public struct ProviderTokenRefusal: Error, Sendable, Equatable {
    public var reason: APNsReason
    public init(_ reason: APNsReason) { self.reason = reason }
}

/// A key provider tokens may be signed with: its `kid`, its team (`iss`)
/// and the check of a signature (TLS's `ES256Verifier.verify`).
public protocol ProviderTokenKey: AnyObject {
    var keyID: String { get }
    var teamID: String { get }
    func verifies(_ signingInput: [UInt8], signature: [UInt8]) -> Bool
}

/// Checks provider tokens against a set of keys, as APNs does. A token's
/// signature is checked once; the verdict is cached by the exact header
/// value, so a request costs one dictionary lookup plus the age check (a
/// token older than an hour is 403 ExpiredProviderToken, re-checked on
/// every request). Confined to one thread (one per event loop): no locking.
public final class ProviderTokenVerifier<Key: ProviderTokenKey> {
    /// Bounded memory: the cache is emptied when it reaches this size.
    @inlinable
    public static var cacheLimit: Int { 4096 }

    /// A token that passed: its key and its `iat`.
    public struct Verified {
        public let key: Key
        public let issuedAt: Int

        @usableFromInline
        init(key: Key, issuedAt: Int) { (self.key, self.issuedAt) = (key, issuedAt) }
    }

    @usableFromInline
    enum Verdict {
        case valid(issuedAt: Int, key: Key)
        case refused(APNsReason)
    }

    @usableFromInline let keys: [String: Key]
    /// A verified key may still be refused (the emulator's key scoped to
    /// the other environment): the reason, cached with the verdict. Only a
    /// token that proves its key learns it; anything else learns nothing
    /// about the keys.
    @usableFromInline let refusal: (Key) -> APNsReason?
    @usableFromInline var cache: [String: Verdict] = [:]

    /// `keys`: one per `kid` (a later key with the same id replaces an earlier one).
    public init(keys: [Key], refusal: @escaping (Key) -> APNsReason? = { _ in nil }) {
        var byID: [String: Key] = [:]
        for key in keys { byID[key.keyID] = key }
        self.keys = byID
        self.refusal = refusal
    }

    public var isEmpty: Bool { keys.isEmpty }

    /// The token's key and `iat`, or APNs' 403 reason: InvalidProviderToken
    /// for a token that does not parse, names another algorithm, an unknown
    /// `kid`, an `iss` that is not the key's team or a signature that does
    /// not verify (Apple's table has that one reason for all of them),
    /// ExpiredProviderToken for one older than an hour.
    /// Inlinable, so each verifier is specialized for its key type: the
    /// emulator checks a token on every request.
    @inlinable
    public func verify(authorization: String, now: Int) -> Result<Verified, ProviderTokenRefusal> {
        let verdict: Verdict
        if let cached = cache[authorization] {
            verdict = cached
        } else {
            verdict = check(authorization)
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[authorization] = verdict
        }
        switch verdict {
        case .refused(let reason):
            return .failure(ProviderTokenRefusal(reason))
        case .valid(let issuedAt, let key):
            if let reason = ProviderToken.ageRefusal(issuedAt: issuedAt, now: now) { return .failure(ProviderTokenRefusal(reason)) }
            return .success(Verified(key: key, issuedAt: issuedAt))
        }
    }

    @usableFromInline
    func check(_ authorization: String) -> Verdict {
        guard let token = ProviderToken(authorization: authorization), let key = keys[token.keyID],
              token.issuer == key.teamID,
              key.verifies(token.signingInput, signature: token.signature) else {
            return .refused(.invalidProviderToken)
        }
        if let reason = refusal(key) { return .refused(reason) }
        return .valid(issuedAt: token.issuedAt, key: key)
    }
}
