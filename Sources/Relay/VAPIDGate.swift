import HTTPCore
import RelayCore
import TLS
import VAPID

/// The check of restricted endpoints (RFC 8292 §4) for one
/// loop's handler: the origin a push's VAPID `aud` must name, and the
/// verdict with the TLS module's SHA-256 and ES256.
///
/// JWTs verified before are remembered (`VAPIDVerifiedTokens`, 1,024 per
/// loop): Mastodon signs a new one for every push (a random ECDSA nonce), so
/// that rarely pays for it, but a sender that reuses its JWT, or a flood of
/// replays of one, then costs a lookup instead of a P-256 verify (about
/// 65 µs here, OpenSSL's own floor; BENCHMARKS.md).
struct VAPIDGate {
    /// `PUBLIC_URL`; nil: the request's scheme and `Host`.
    let publicURL: String?
    /// The listener speaks TLS itself (then the scheme is https whatever
    /// `X-Forwarded-Proto` says).
    let listenerIsTLS: Bool
    private var verifiedTokens = VAPIDVerifiedTokens()

    init(publicURL: String?, listenerIsTLS: Bool) {
        self.publicURL = publicURL
        self.listenerIsTLS = listenerIsTLS
    }

    static let crypto = VAPIDCrypto(
        sha256: { SHA256.hash($0) },
        verifyES256: { key, message, signature in
            // A key that is no P-256 point cannot have signed anything.
            guard let verifier = try? ES256Verifier(uncompressedPublicKey: key) else { return false }
            return verifier.verify(message, signature: signature)
        })

    /// The origin the sender addressed: `PUBLIC_URL`, else the scheme the
    /// request came by (the relay's TLS, else the proxy's
    /// `X-Forwarded-Proto`, else http) and its `Host` (the nginx site passes
    /// it with its port).
    func audience(of request: HTTP1Request) -> String {
        if let publicURL { return publicURL }
        var scheme = "http"
        if listenerIsTLS {
            scheme = "https"
        } else if let forwarded = request.headers["x-forwarded-proto"] {
            // A proxy chain lists one per hop; the first is the sender's.
            let first = forwarded.utf8.split(separator: UInt8(ascii: ",")).first
                .map { String(decoding: trimmingOWS($0), as: UTF8.self).lowercased() } ?? ""
            if first == "https" || first == "http" { scheme = first }
        }
        return scheme + "://" + (request.headers["host"] ?? "")
    }

    mutating func check(_ request: HTTP1Request, keyHash: [UInt8], now: Int) -> VAPIDVerdict {
        checkVAPID(request.headers, keyHash: keyHash, audience: audience(of: request), now: now, crypto: Self.crypto,
                   verifiedTokens: &verifiedTokens)
    }
}
