// JWTs already verified (a JWT seen before within its lifetime is
// remembered instead of checking its signature again): a sender
// that reuses its JWT for many pushes costs one P-256 verification per
// JWT, not per push.

/// A bounded memory of verified JWTs, one per event loop (not shared, so no
/// locks): token and endpoint key hash → what the verified token says.
///
/// An entry is made only after SHA-256 of the request's key matched the
/// hash and the signature verified under that key, so a later request with
/// the same token and hash carries a JWT signed by the endpoint's key; the
/// key it names need not be hashed or checked again. The whole token is the
/// key (not its signature, which an altered header or claims could reuse).
public struct VAPIDVerifiedTokens: Sendable {
    /// What a verified token's claims said.
    struct Claims: Sendable, Equatable {
        var audience: String
        var expiry: Int
    }

    /// The token's bytes, not the String: Strings compare by canonical
    /// equivalence, and a token spelled with U+212A KELVIN SIGN for a `K`
    /// must not pass for the one that was verified.
    private struct Key: Hashable, Sendable {
        var token: [UInt8]
        var keyHash: [UInt8]

        init(_ token: String, _ keyHash: [UInt8]) {
            self.token = Array(token.utf8)
            self.keyHash = keyHash
        }
    }

    /// At most this many entries; 1,024 tokens of Mastodon's size (about
    /// 300 bytes) are well under 1 MiB.
    public let capacity: Int
    private var entries: [Key: Claims] = [:]

    public init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    /// Whether `token` was verified for `keyHash` and has not expired at `now`.
    public func contains(token: String, keyHash: [UInt8], now: Int) -> Bool {
        claims(token: token, keyHash: keyHash, now: now) != nil
    }

    /// The claims of a verified, unexpired token; nil otherwise (an expired
    /// entry is never honoured, even before it is evicted).
    func claims(token: String, keyHash: [UInt8], now: Int) -> Claims? {
        guard let claims = entries[Key(token, keyHash)], claims.expiry > now else { return nil }
        return claims
    }

    /// Remembers a verified token. When full, expired entries go first, then
    /// arbitrary ones until there is room: the memory never grows past
    /// `capacity`, and a full memory only costs verifications.
    mutating func insert(token: String, keyHash: [UInt8], claims: Claims, now: Int) {
        guard claims.expiry > now else { return }
        let key = Key(token, keyHash)
        if entries[key] == nil && entries.count >= capacity {
            entries = entries.filter { $0.value.expiry > now }
            while entries.count >= capacity { entries.remove(at: entries.startIndex) }
        }
        entries[key] = claims
    }
}
