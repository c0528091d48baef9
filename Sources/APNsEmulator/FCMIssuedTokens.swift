import Base64URL
import Locking

/// The access tokens the token endpoint issued, each with its account and
/// expiry, as Google keeps them: `messages:send` takes a token only while
/// it is unexpired. Thread-safe (every loop thread issues and checks).
final class FCMIssuedTokens: Sendable {
    struct Grant: Sendable {
        let account: FCMTrustedAccount
        /// Unix seconds; the token is refused from then on.
        let expiresAt: Int
    }

    private let grants = Locked<[String: Grant]>([:])

    /// A new token for `account`, valid for `lifetime` seconds from `now`.
    /// Expired grants are forgotten meanwhile, so memory follows the
    /// tokens alive.
    func issue<Generator: RandomNumberGenerator>(for account: FCMTrustedAccount, now: Int, lifetime: Int,
                                                 using generator: inout Generator) -> String {
        var random: [UInt8] = []
        for _ in 0..<4 { withUnsafeBytes(of: generator.next() as UInt64) { random.append(contentsOf: $0) } }
        // Google's access tokens start with "ya29."; the rest is opaque.
        let token = "ya29.emulator-" + base64URLEncode(random)
        let grant = Grant(account: account, expiresAt: now + lifetime)
        grants.withLock { grants in
            grants = grants.filter { $0.value.expiresAt > now }
            grants[token] = grant
        }
        return token
    }

    /// The grant of an unexpired token, nil for any other.
    func grant(for token: String, now: Int) -> Grant? {
        guard let grant = grants.withLock({ $0[token] }), grant.expiresAt > now else { return nil }
        return grant
    }

    func removeAll() {
        grants.withLock { $0.removeAll() }
    }
}
