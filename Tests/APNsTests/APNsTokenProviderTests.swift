@testable import APNs
import Base64URL
import Foundation
import RelayCore
import TLS
import TestSupport
import Testing

@Suite("APNs provider tokens")
struct APNsTokenProviderTests {
    static func provider(now: Int) throws -> APNsTokenProvider {
        let signer = try ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8))
        return try APNsTokenProvider(signer: signer, keyID: "KEY1234567", teamID: "TEAM765432", now: now)
    }

    static func parts(_ token: String) throws -> [[UInt8]] {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(pieces.count == 3)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
        return try pieces.map { try base64URLDecode($0) }
    }

    @Test("the JWT has the ES256 header, iss and iat claims and a valid raw r‖s signature")
    func jwtShape() throws {
        let token = try Self.provider(now: 1_700_000_000).token(now: 1_700_000_000)
        let parts = try Self.parts(token)
        #expect(String(decoding: parts[0], as: UTF8.self) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(String(decoding: parts[1], as: UTF8.self) == #"{"iss":"TEAM765432","iat":1700000000}"#)
        #expect(parts[2].count == 64)
        let verifier = try ES256Verifier(publicKeyPEM: TestCertificates.bytes(TestCertificates.authKeyPublic))
        let signingInput = Array(token.split(separator: ".").prefix(2).joined(separator: ".").utf8)
        #expect(verifier.verify(signingInput, signature: parts[2]))
        var tampered = parts[2]
        tampered[10] ^= 1
        #expect(!verifier.verify(signingInput, signature: tampered))
    }

    @Test("one token is reused until it is 50 minutes old, then renewed")
    func renewal() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        let first = provider.token(now: start)
        #expect(provider.token(now: start + 49 * 60 + 59) == first)
        let renewed = provider.currentToken(now: start + 50 * 60)
        #expect(renewed.token != first)
        #expect(renewed.issuedAt == start + 50 * 60)
        #expect(provider.issuedAt == start + 50 * 60)
        #expect(String(decoding: try Self.parts(renewed.token)[1], as: UTF8.self).contains("\"iat\":\(start + 3000)"))
    }

    @Test("the authorization value is bearer and the current token, renewed with it")
    func authorization() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        let first = provider.currentAuthorization(now: start + 60)
        #expect(first.value == "bearer " + provider.token(now: start + 60))
        #expect(first.issuedAt == start)
        let renewed = provider.currentAuthorization(now: start + 50 * 60)
        #expect(renewed.issuedAt == start + 50 * 60)
        #expect(renewed.value == "bearer " + provider.token(now: start + 50 * 60))
        #expect(renewed.value != first.value)
        // A clock stepped back renews here too.
        #expect(provider.currentAuthorization(now: start).issuedAt == start)
    }

    @Test("a rejected token is renewed only when at least 20 minutes old, and only once")
    func rejection() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        provider.tokenRejected(issuedAt: start, now: start + 19 * 60)
        #expect(provider.issuedAt == start)
        provider.tokenRejected(issuedAt: start, now: start + 20 * 60)
        #expect(provider.issuedAt == start + 20 * 60)
        // A second report about the old token does not renew again.
        provider.tokenRejected(issuedAt: start, now: start + 45 * 60)
        #expect(provider.issuedAt == start + 20 * 60)
    }

    // MARK: TooManyProviderTokenUpdates

    @Test("a renewal APNs refuses as an update too many: the token before it serves again, then the refused one, and nothing is signed for 20 minutes")
    func refusedRenewalGoesBack() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        let first = provider.currentToken(now: start)
        let renewedAt = start + APNsTokenProvider.renewalAge
        let renewed = provider.currentToken(now: renewedAt)
        #expect(renewed.issuedAt == renewedAt)
        provider.tokenUpdatesRefused(issuedAt: renewed.issuedAt, now: renewedAt + 1)
        // Back to the first token, 50 minutes old: not renewed while it has
        // more than the 5-minute margin left.
        #expect(provider.currentToken(now: renewedAt + 1) == first)
        #expect(provider.currentToken(now: start + 55 * 60 - 1) == first)
        // Then the refused token again, rather than a third one.
        #expect(provider.currentToken(now: start + 55 * 60) == renewed)
        #expect(provider.currentToken(now: renewedAt + 49 * 60) == renewed)
        // Renewals resume as usual, 50 minutes after the refused token.
        #expect(provider.currentToken(now: renewedAt + 50 * 60).issuedAt == renewedAt + 50 * 60)
    }

    @Test("a token going back to must have more than the 5-minute margin left", arguments: [
        // (seconds after the renewal that the refusal comes, went back)
        (0, true), (5 * 60 - 1, true), (5 * 60, false), (9 * 60, false),
    ])
    func marginToGoBack(after: Int, wentBack: Bool) throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        let renewedAt = start + APNsTokenProvider.renewalAge
        let renewed = provider.currentToken(now: renewedAt)
        provider.tokenUpdatesRefused(issuedAt: renewed.issuedAt, now: renewedAt + after)
        #expect(provider.issuedAt == (wentBack ? start : renewedAt))
    }

    @Test("with no token to go back to, the refused one stays and nothing is signed for 20 minutes from the refusal")
    func refusedWithoutPrevious() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        let first = provider.currentToken(now: start)
        // A restart: the first token is the update too many.
        provider.tokenUpdatesRefused(issuedAt: start, now: start + 60)
        #expect(provider.currentToken(now: start + 60) == first)
        // An expired or invalid token 20 minutes old is renewed as a rule,
        // but not while signing is held.
        provider.tokenRejected(issuedAt: start, now: start + 60 + 20 * 60 - 1)
        #expect(provider.issuedAt == start)
        provider.tokenRejected(issuedAt: start, now: start + 60 + 20 * 60)
        #expect(provider.issuedAt == start + 60 + 20 * 60)
    }

    @Test("a refusal reported for a token no longer in use changes nothing")
    func staleRefusal() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        let renewedAt = start + APNsTokenProvider.renewalAge
        _ = provider.currentToken(now: renewedAt)
        provider.tokenUpdatesRefused(issuedAt: renewedAt, now: renewedAt)
        #expect(provider.issuedAt == start)
        // Another loop's request with the refused token reports it too.
        provider.tokenUpdatesRefused(issuedAt: renewedAt, now: renewedAt + 2)
        #expect(provider.issuedAt == start)
        // And one about a token long gone.
        provider.tokenUpdatesRefused(issuedAt: start - 3000, now: renewedAt + 3)
        #expect(provider.currentToken(now: renewedAt + 4).issuedAt == start)
    }

    @Test("while signing is held the 50-minute renewal waits, but a token about to expire with nothing else left is renewed: an expired one never passes")
    func heldButExpiring() throws {
        let start = 1_700_000_000
        let provider = try Self.provider(now: start)
        provider.tokenUpdatesRefused(issuedAt: start, now: start + 40 * 60)
        #expect(provider.currentToken(now: start + 50 * 60).issuedAt == start)
        #expect(provider.currentToken(now: start + 55 * 60 - 1).issuedAt == start)
        #expect(provider.currentToken(now: start + 55 * 60).issuedAt == start + 55 * 60)
    }

    @Test("a clock stepped back renews rather than sending an iat in the future")
    func clockBack() throws {
        let provider = try Self.provider(now: 1_700_000_000)
        #expect(provider.currentToken(now: 1_699_999_000).issuedAt == 1_699_999_000)
    }

    @Test("the provider is shared across threads")
    func concurrent() async throws {
        let provider = try Self.provider(now: 1_700_000_000)
        let tokens = await withTaskGroup(of: String.self) { group in
            for offset in 0..<16 { group.addTask { provider.token(now: 1_700_003_000 + offset % 2) } }
            var all: Set<String> = []
            for await token in group { all.insert(token) }
            return all
        }
        #expect(tokens.count == 1)
    }
}
