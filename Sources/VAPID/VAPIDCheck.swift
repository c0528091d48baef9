// The verdict on a push to a restricted endpoint (RFC 8292 §4.2),
// with the cryptography injected: this module does no I/O and links no C,
// so the relay passes OpenSSL's SHA-256 and ES256 in, and the tests and the
// fuzzer pass fakes.

import HTTPCore
import RelayCore

/// The two primitives a VAPID check needs.
public struct VAPIDCrypto: Sendable {
    public var sha256: @Sendable ([UInt8]) -> [UInt8]
    /// Whether `signature`, raw r‖s (64 bytes, RFC 7518 §3.4), is an ES256
    /// signature of `message` under `publicKey`, an uncompressed P-256 point.
    public var verifyES256: @Sendable (_ publicKey: [UInt8], _ message: [UInt8], _ signature: [UInt8]) -> Bool

    public init(sha256: @escaping @Sendable ([UInt8]) -> [UInt8],
                verifyES256: @escaping @Sendable (_ publicKey: [UInt8], _ message: [UInt8], _ signature: [UInt8]) -> Bool) {
        self.sha256 = sha256
        self.verifyES256 = verifyES256
    }
}

/// Why a correctly signed JWT is not accepted now: the sender's fault, or
/// the relay's origin setting or clock.
public enum VAPIDDoubt: String, Sendable {
    /// `aud` is not the origin the relay expects.
    case audience
    /// `exp` has passed.
    case expired
    /// `exp` is more than 24 hours (plus `VAPIDLimits.clockSkew`) ahead.
    case tooFarAhead
}

/// The answer to a push to a restricted endpoint, by who can be at fault
/// (WIRE.md §1.3, §3: never a 4xx that could delete a healthy
/// subscription because of the relay). Reasons are one line and show
/// neither the JWT nor the key.
public enum VAPIDVerdict: Sendable, Equatable {
    /// Signed by the endpoint's key, for this relay, in its time window.
    case accepted
    /// No VAPID authentication: 401 with `WWW-Authenticate: vapid`
    /// (RFC 8292 §4.2 suggests 401 for absent authentication, and §3 the
    /// scheme's challenge).
    case unauthenticated(String)
    /// Malformed, signed by another key, or a signature that fails: 403
    /// (RFC 8292 §4.2); only a sender other than the subscribed server gets it.
    case forbidden(String)
    /// Signed by the endpoint's key, but `aud` or `exp` does not fit: 503
    /// with `Retry-After` (a replay, or the relay's origin or clock is wrong).
    case unverifiable(VAPIDDoubt, String)
}

/// The verdict on `headers` for an endpoint restricted to the key whose
/// SHA-256 is `keyHash`, in this order: no authentication →
/// 401; malformed headers or JWT (not three base64url parts, `alg` not
/// ES256, `aud`/`exp` missing or mistyped, a signature not 64 bytes) → 403;
/// SHA-256 of the key ≠ `keyHash` → 403; a signature that does not verify
/// → 403; then `aud` ≠ `audience` (as origins, `vapidOrigin(of:)`) → 503;
/// `exp` ≤ `now` → 503; `exp` > `now` + 24 h + `VAPIDLimits.clockSkew` →
/// 503. `now` is seconds since the epoch.
public func checkVAPID(_ headers: HTTPHeaders, keyHash: [UInt8], audience: String, now: Int,
                       crypto: VAPIDCrypto) -> VAPIDVerdict {
    var nothing: VAPIDVerifiedTokens?
    return check(headers, keyHash: keyHash, audience: audience, now: now, crypto: crypto, verifiedTokens: &nothing)
}

/// The same, remembering verified JWTs in `verifiedTokens` (one per event
/// loop): a JWT seen before, for the same key hash and still unexpired, is
/// not hashed, parsed or verified again; `aud` and `exp` are still checked.
public func checkVAPID(_ headers: HTTPHeaders, keyHash: [UInt8], audience: String, now: Int,
                       crypto: VAPIDCrypto, verifiedTokens: inout VAPIDVerifiedTokens) -> VAPIDVerdict {
    // Moved into the optional and back, not copied: no copy-on-write of its storage.
    var memory: VAPIDVerifiedTokens? = verifiedTokens
    verifiedTokens = VAPIDVerifiedTokens(capacity: 1)
    defer { verifiedTokens = memory! }
    return check(headers, keyHash: keyHash, audience: audience, now: now, crypto: crypto, verifiedTokens: &memory)
}

private func check(_ headers: HTTPHeaders, keyHash: [UInt8], audience: String, now: Int, crypto: VAPIDCrypto,
                   verifiedTokens: inout VAPIDVerifiedTokens?) -> VAPIDVerdict {
    let authentication: VAPIDAuthentication
    switch vapidAuthentication(in: headers) {
    case .absent:
        return .unauthenticated("no VAPID authentication (Authorization: vapid t=<JWT>, k=<key>)")
    case .malformed(let reason):
        return .forbidden(reason)
    case .present(let present):
        authentication = present
    }

    let claims: VAPIDVerifiedTokens.Claims
    if let remembered = verifiedTokens?.claims(token: authentication.token, keyHash: keyHash, now: now) {
        claims = remembered
    } else {
        let token: VAPIDToken
        switch VAPIDToken.parse(authentication.token) {
        case .failure(let error): return .forbidden(error.reason)
        case .success(let parsed): token = parsed
        }
        guard crypto.sha256(authentication.publicKey) == keyHash else {
            return .forbidden("VAPID key is not the endpoint's (vapid= is the SHA-256 of another key)")
        }
        guard crypto.verifyES256(authentication.publicKey, token.signingInput, token.signature) else {
            return .forbidden("VAPID JWT signature does not verify with its key")
        }
        claims = VAPIDVerifiedTokens.Claims(audience: token.audience, expiry: token.expiry)
        verifiedTokens?.insert(token: authentication.token, keyHash: keyHash, claims: claims, now: now)
    }
    return window(claims, audience: audience, now: now)
}

/// The checks of a correctly signed JWT: its audience and time window.
private func window(_ claims: VAPIDVerifiedTokens.Claims, audience: String, now: Int) -> VAPIDVerdict {
    let expected = vapidOrigin(of: audience)
    guard let expected, vapidOrigin(of: claims.audience) == expected else {
        return .unverifiable(.audience, "VAPID aud \(shown(claims.audience)) is not \(shown(expected ?? audience)), "
            + "the origin this relay expects (a JWT for another push service, or the relay's origin setting is wrong)")
    }
    if claims.expiry <= now {
        return .unverifiable(.expired, "VAPID exp passed \(now - claims.expiry) s ago "
            + "(a replay, or the relay's clock is ahead)")
    }
    let latest = now + VAPIDLimits.maxLifetime + VAPIDLimits.clockSkew
    if claims.expiry > latest {
        return .unverifiable(.tooFarAhead, "VAPID exp is \(claims.expiry - now) s ahead, more than 24 h "
            + "and \(VAPIDLimits.clockSkew) s (RFC 8292 §2; or the relay's clock is behind)")
    }
    return .accepted
}

/// An origin as a reason may show it: quoted, printable ASCII only, and
/// short. Under 80 bytes it cannot hold a JWT (a signature alone is 86
/// base64url digits) or a key (87), so no reason repeats either.
private func shown(_ text: String) -> String {
    let limit = 64
    let bytes = Array(text.utf8)
    guard bytes.count <= limit, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }) else {
        return "(\(bytes.count) bytes, not shown)"
    }
    return "\"" + text + "\""
}
