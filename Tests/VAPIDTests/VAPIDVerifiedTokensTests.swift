import RelayCore
import Testing
@testable import VAPID

/// A crypto that counts its verifications and says what `answer` says.
final class CountingCrypto: @unchecked Sendable {
    var verifications = 0
    var answer = true

    var crypto: VAPIDCrypto {
        VAPIDCrypto(sha256: fakeHash) { [self] key, message, signature in
            verifications += 1
            return answer && signature == fakeSignature(key: key, message: message)
        }
    }
}

struct VAPIDVerifiedTokensTests {
    @Test("a JWT verified once is not verified again for the same endpoint key, and its aud and exp still count")
    func remembers() {
        let counting = CountingCrypto()
        var memory = VAPIDVerifiedTokens()
        let keyHash = fakeHash(serverKey)
        let headers = vapidHeaders()
        #expect(checkVAPID(headers, keyHash: keyHash, audience: audience, now: now, crypto: counting.crypto,
                           verifiedTokens: &memory) == .accepted)
        #expect(counting.verifications == 1)
        #expect(memory.contains(token: jwt(), keyHash: keyHash, now: now))
        // Remembered: a crypto that now refuses everything is not asked.
        counting.answer = false
        #expect(checkVAPID(headers, keyHash: keyHash, audience: audience, now: now + 60, crypto: counting.crypto,
                           verifiedTokens: &memory) == .accepted)
        #expect(counting.verifications == 1)
        // The audience and the time window are checked on every push.
        #expect(Expected(checkVAPID(headers, keyHash: keyHash, audience: "https://other.example", now: now,
                                    crypto: counting.crypto, verifiedTokens: &memory)) == .unverifiable(.audience))
        #expect(counting.verifications == 1)
        // Once expired, the entry is not honoured: verified again (and expired).
        counting.answer = true
        #expect(Expected(checkVAPID(headers, keyHash: keyHash, audience: audience, now: now + 3600,
                                    crypto: counting.crypto, verifiedTokens: &memory)) == .unverifiable(.expired))
        #expect(counting.verifications == 2)
        #expect(!memory.contains(token: jwt(), keyHash: keyHash, now: now + 3600))
        // Another endpoint's key hash is not the remembered one: checked in full.
        #expect(Expected(checkVAPID(headers, keyHash: fakeHash(otherKey), audience: audience, now: now,
                                    crypto: counting.crypto, verifiedTokens: &memory))
            == .forbidden("VAPID key is not the endpoint's (vapid= is the SHA-256 of another key)"))
    }

    @Test("a JWT that failed is not remembered")
    func forgetsFailures() {
        let counting = CountingCrypto()
        var memory = VAPIDVerifiedTokens()
        let headers = vapidHeaders(token: jwt(signer: otherKey))
        for _ in 0..<2 {
            #expect(Expected(checkVAPID(headers, keyHash: fakeHash(serverKey), audience: audience, now: now,
                                        crypto: counting.crypto, verifiedTokens: &memory))
                == .forbidden("VAPID JWT signature does not verify with its key"))
        }
        #expect(counting.verifications == 2)
        #expect(memory.count == 0)
    }

    /// A memory holding one token for key hash [1], valid for 10 s from `now`.
    private func remembering(_ token: String) -> VAPIDVerifiedTokens {
        var memory = VAPIDVerifiedTokens()
        memory.insert(token: token, keyHash: [1], claims: .init(audience: audience, expiry: now + 10), now: now)
        return memory
    }

    @Test("an expired entry is not honoured, and an expired JWT is not remembered")
    func expiry() {
        var memory = remembering("t")
        #expect(memory.contains(token: "t", keyHash: [1], now: now + 9))
        #expect(!memory.contains(token: "t", keyHash: [1], now: now + 10))
        #expect(!memory.contains(token: "t", keyHash: [2], now: now))
        memory.insert(token: "old", keyHash: [1], claims: .init(audience: audience, expiry: now + 10), now: now + 10)
        #expect(memory.count == 1)
    }

    @Test("a token is remembered by its bytes, not by canonical equivalence")
    func bytesNotCanonicalEquivalence() {
        let memory = remembering("eyK.a.b")
        // U+212A KELVIN SIGN is canonically equivalent to "K": equal as Strings.
        let kelvin = "ey\u{212A}.a.b"
        #expect(kelvin == "eyK.a.b")
        #expect(!memory.contains(token: kelvin, keyHash: [1], now: now))
        #expect(memory.contains(token: "eyK.a.b", keyHash: [1], now: now))
    }

    @Test("the memory never holds more than its capacity, and makes room with expired entries first")
    func bounded() {
        var memory = VAPIDVerifiedTokens(capacity: 8)
        for index in 0..<8 {
            let expiry = index < 3 ? now + 1 : now + 1000
            memory.insert(token: "t\(index)", keyHash: [0], claims: .init(audience: audience, expiry: expiry), now: now)
        }
        #expect(memory.count == 8)
        // At now + 1 three are expired: the new entry takes one of their places.
        memory.insert(token: "new", keyHash: [0], claims: .init(audience: audience, expiry: now + 1000), now: now + 1)
        #expect(memory.count == 6)
        #expect((3..<8).allSatisfy { memory.contains(token: "t\($0)", keyHash: [0], now: now + 1) })
        for index in 0..<100 {
            memory.insert(token: "more\(index)", keyHash: [0], claims: .init(audience: audience, expiry: now + 1000), now: now + 1)
            #expect(memory.count <= 8)
        }
        #expect(memory.contains(token: "more99", keyHash: [0], now: now + 1))
    }
}
