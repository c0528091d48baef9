import APNs
import Dispatch
import Fleet
import Glibc
import Locking
import Observability
import Redis
import TLS
import Testing
import TestSupport

/// One instance's token provider for the key, on its own link to a shared Redis.
private struct Signer {
    let link: RedisLink
    let provider: APNsTokenProvider
    let sharing: ProviderTokenSharing
    let warnings = LoggedLines()

    init(_ server: RedisServer, now: @escaping @Sendable () -> Int = { Int(Glibc.time(nil)) },
         issuedAt: Int = Int(Glibc.time(nil)), commandTimeout: Duration = .seconds(5)) throws {
        var settings = RedisConnectionSettings()
        settings.commandTimeout = commandTimeout
        link = try RedisLink(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), name: "commands", settings: settings)
        let signer = try ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8))
        let provider = try APNsTokenProvider(signer: signer, keyID: "KEY1234567", teamID: "TEAM765432", now: issuedAt)
        self.provider = provider
        sharing = ProviderTokenSharing(link: link, providers: { [provider] }, now: now, logger: warnings.logger)
    }
}

private let key = FleetKeys.providerToken(teamID: "TEAM765432", keyID: "KEY1234567")

private func synchronizeAtOnce(_ signers: [Signer]) {
    DispatchQueue.concurrentPerform(iterations: signers.count) { index in
        #expect(signers[index].sharing.synchronizeAll(waitingAtMost: .seconds(10)))
    }
}

private func stored(_ link: RedisLink) -> SharedProviderToken? {
    guard case .success(let value)? = link.run("GET", key), let bytes = value.bytes,
          case .success(let shared) = SharedProviderToken.decode(bytes) else { return nil }
    return shared
}

@Suite("One provider token per key across a fleet", .serialized)
struct ProviderTokenSharingTests {
    @Test("three instances starting at once end with one token, the one in Redis, with its expiry")
    func threeStartOneToken() throws {
        let server = try RedisServer()
        let signers = try (0..<3).map { _ in try Signer(server) }
        defer { signers.forEach { $0.link.close() } }
        #expect(Set(signers.map(\.provider.inUse.token)).count == 3)
        synchronizeAtOnce(signers)
        let tokens = Set(signers.map(\.provider.inUse.token))
        #expect(tokens.count == 1)
        #expect(stored(signers[0].link)?.token == tokens.first)
        guard case .success(.integer(let ttl))? = signers[0].link.run("TTL", key) else {
            Issue.record("no TTL")
            return
        }
        #expect(ttl > 3500 && ttl <= 3600)
    }

    @Test("a shared token 45 minutes old is renewed by exactly one instance and the others adopt its token")
    func renewedOnce() throws {
        let server = try RedisServer()
        let now = Int(Glibc.time(nil))
        let signers = try (0..<3).map { _ in try Signer(server, issuedAt: now - 46 * 60) }
        defer { signers.forEach { $0.link.close() } }
        let old = signers[0].provider.inUse
        _ = signers[0].link.run("SET", key, "\(old.issuedAt) \(old.token)")
        // Each sends the old one until the fleet renews it: no one signed its own.
        synchronizeAtOnce(signers)
        let tokens = Set(signers.map(\.provider.inUse.token))
        #expect(tokens.count == 1)
        #expect(!tokens.contains(old.token))
        let shared = try #require(stored(signers[0].link))
        #expect(tokens.first == shared.token)
        #expect(abs(shared.issuedAt - now) <= 5)
        // Checked again, nothing changes: no renewal before the token is 45 minutes old.
        synchronizeAtOnce(signers)
        #expect(stored(signers[0].link) == shared)
        #expect(Set(signers.map(\.provider.inUse.token)) == tokens)
    }

    @Test("a young shared token is adopted as it is, with no new token signed")
    func adoptsYoung() throws {
        let server = try RedisServer()
        let now = Int(Glibc.time(nil))
        let first = try Signer(server, issuedAt: now - 600)
        let second = try Signer(server)
        defer { first.link.close(); second.link.close() }
        #expect(first.sharing.synchronizeAll(waitingAtMost: .seconds(10)))
        #expect(stored(first.link)?.issuedAt == now - 600)
        #expect(second.sharing.synchronizeAll(waitingAtMost: .seconds(10)))
        #expect(second.provider.inUse.token == first.provider.inUse.token)
        #expect(second.provider.inUse.issuedAt == now - 600)
    }

    @Test("values in the key that are no usable token of the key are one line each, without the token, and replaced",
          arguments: [
              "garbage",
              "1700000000 eyJh.eyJp.c2ln",
              "OTHERKEY",
              "FUTURE",
          ])
    func badValuesReplaced(kind: String) throws {
        let server = try RedisServer()
        let signer = try Signer(server)
        defer { signer.link.close() }
        let now = Int(Glibc.time(nil))
        let value: String
        switch kind {
        case "OTHERKEY":
            let other = try APNsTokenProvider(
                signer: ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8)),
                keyID: "KEY7654321", teamID: "TEAM765432", now: now)
            value = "\(now) \(other.inUse.token)"
        case "FUTURE":
            value = "\(now + 600) \(try #require(signer.provider.sign(issuedAt: now + 600)))"
        default:
            value = kind
        }
        _ = signer.link.run("SET", key, value)
        #expect(signer.sharing.synchronizeAll(waitingAtMost: .seconds(10)))
        #expect(stored(signer.link)?.token == signer.provider.inUse.token)
        #expect(signer.provider.inUse.issuedAt <= now + 1)
        // Checked again: the good value stays, no second line.
        #expect(signer.sharing.synchronizeAll(waitingAtMost: .seconds(10)))
        let lines = signer.warnings.messages
        #expect(lines.count == 1)
        #expect(lines.allSatisfy { !$0.contains(value.split(separator: " ").last.map(String.init) ?? value) || kind == "garbage" })
    }

    @Test("with Redis down an instance keeps its own token and hears back within the command timeout")
    func redisDownKeepsOwn() throws {
        let server = try RedisServer()
        let signer = try Signer(server, commandTimeout: .seconds(1))
        defer { signer.link.close() }
        server.kill()
        let own = signer.provider.inUse
        #expect(signer.sharing.synchronizeAll(waitingAtMost: .seconds(5)))
        #expect(signer.provider.inUse == own)
        #expect(signer.warnings.messages.isEmpty)
    }
}
