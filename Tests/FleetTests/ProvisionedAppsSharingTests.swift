import APNs
import APNsCore
import Dispatch
import Fleet
import Glibc
import Locking
import Observability
import Redis
import Provisioning
import RelayCore
import Testing
import TestSupport

/// One instance's provisioned apps on its own link to a shared Redis.
private struct Instance {
    let link: RedisLink
    let apps: ProvisionedApps
    let sharing: ProvisionedAppsSharing
    let warnings = LoggedLines()

    init(_ server: RedisServer, commandTimeout: Duration = .seconds(5)) throws {
        var settings = RedisConnectionSettings()
        settings.commandTimeout = commandTimeout
        link = try RedisLink(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), name: "commands", settings: settings)
        sharing = ProvisionedAppsSharing(link: link, now: { Int(Glibc.time(nil)) }, logger: warnings.logger)
        apps = ProvisionedApps(catalog: APNsCredentialCatalog(caFile: nil), sharing: sharing)
    }

    func provision(_ id: String, _ pem: [UInt8], _ environment: APNsEnvironment = .development)
        -> Result<ProvisionedApps.Outcome, ProvisionedApps.Refusal>? {
        let result = Locked<Result<ProvisionedApps.Outcome, ProvisionedApps.Refusal>?>(nil)
        let done = DispatchSemaphore(value: 0)
        sharing.provision(appID: id, pem: pem, environment: environment, into: apps) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        guard done.wait(timeout: .now() + 15) == .success else { return nil }
        return result.withLock { $0 }
    }

    func lookUp(_ id: String) -> RelayApp? {
        let result = Locked<RelayApp?>(nil)
        let done = DispatchSemaphore(value: 0)
        sharing.lookUp(id, into: apps) { app in
            result.withLock { $0 = app }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 15)
        return result.withLock { $0 }
    }

    func load() -> Bool {
        let done = DispatchSemaphore(value: 0)
        sharing.load(into: apps) { done.signal() }
        return done.wait(timeout: .now() + 15) == .success
    }
}

private func clientPEM() throws -> [UInt8] {
    try TestCertificates.bytes(TestCertificates.clientCertificate) + TestCertificates.bytes(TestCertificates.clientKey)
}

@Suite("Provisioned apps shared through Redis", .serialized)
struct ProvisionedAppsSharingTests {
    @Test("an app provisioned through one instance is in the hash and another finds it on a miss")
    func provisionThroughOneFindThroughAnother() throws {
        let server = try RedisServer()
        let first = try Instance(server)
        let second = try Instance(server)
        defer { first.link.close(); second.link.close() }
        let pem = try clientPEM()

        guard case .success(.provisioned(let app)) = first.provision("toot", pem, .production) else {
            Issue.record("provision was not answered with the app")
            return
        }
        #expect(app.topic == TestCertificates.bundleID)
        let stored = try #require(first.link.run("HGET", FleetKeys.provisionedApps, "toot")?.get().bytes)
        #expect(ProvisionedAppRecord.decode(stored) == .success(ProvisionedAppRecord(environment: .production, pem: pem)))

        #expect(second.apps.app(id: "toot") == nil)
        let found = try #require(second.lookUp("toot"))
        #expect(found.topic == TestCertificates.bundleID)
        #expect(found.production != nil && found.development == nil)
        #expect(second.apps.app(id: "toot")?.topic == TestCertificates.bundleID)
        #expect(second.lookUp("nobody") == nil)
    }

    @Test("a second provision of an id another instance wrote first is ignored and the fleet's app adopted")
    func secondProvisionAdoptsTheFleetsApp() throws {
        let server = try RedisServer()
        let first = try Instance(server)
        let second = try Instance(server)
        defer { first.link.close(); second.link.close() }
        let pem = try clientPEM()
        guard case .success(.provisioned) = first.provision("toot", pem, .development) else {
            Issue.record("the first provision failed")
            return
        }
        guard case .success(.alreadyKnown) = second.provision("toot", pem, .production) else {
            Issue.record("the second provision was not ignored")
            return
        }
        let adopted = try #require(second.apps.app(id: "toot"))
        #expect(adopted.development != nil && adopted.production == nil)
    }

    @Test("a provision of an id the hash holds with an unusable value is a fault, not a success")
    func provisionOverAnUnusableValueFaults() throws {
        let server = try RedisServer()
        let instance = try Instance(server)
        defer { instance.link.close() }
        _ = instance.link.run("HSET", FleetKeys.provisionedApps, "toot", "staging\nnot a PEM")
        guard case .failure(let refusal) = instance.provision("toot", try clientPEM()) else {
            Issue.record("a provision over an unusable value succeeded")
            return
        }
        #expect(refusal.description.contains("cannot use"))
        #expect(instance.apps.app(id: "toot") == nil)
        #expect(instance.warnings.messages.count == 1)
    }

    @Test("a restarted fleet loads every app back, and values that fail the checks are one line each, without the PEM")
    func loadSkipsBadValues() throws {
        let server = try RedisServer()
        let writer = try Instance(server)
        defer { writer.link.close() }
        let pem = try clientPEM()
        for id in ["one", "two"] {
            guard case .success(.provisioned) = writer.provision(id, pem) else {
                Issue.record("provision \(id) failed")
                return
            }
        }
        let expired = try TestCertificates.bytes(TestCertificates.expiredClientCertificate)
            + TestCertificates.bytes(TestCertificates.expiredClientKey)
        let key = try TestCertificates.bytes(TestCertificates.clientKey)
        let hostile: [(field: String, value: [UInt8])] = [
            ("garbage", Array("not a record".utf8)),
            ("staging", Array("staging\n".utf8) + pem),
            ("expired", Array("production\n".utf8) + expired),
            ("keyonly", Array("production\n".utf8) + key),
            ("bad id with spaces", Array("production\n".utf8) + pem),
        ]
        for (field, value) in hostile {
            _ = writer.link.run("HSET", FleetKeys.provisionedApps, field, String(decoding: value, as: UTF8.self))
        }

        let restarted = try Instance(server)
        defer { restarted.link.close() }
        #expect(restarted.load())
        #expect(restarted.apps.count == 2)
        #expect(restarted.apps.app(id: "one") != nil && restarted.apps.app(id: "two") != nil)
        let lines = restarted.warnings.messages
        #expect(lines.count == 5)
        #expect(lines.allSatisfy { !$0.contains("PRIVATE KEY") && !$0.contains("BEGIN") })
        #expect(lines.contains { $0.contains("garbage") && $0.contains("no environment line") })
        #expect(lines.contains { $0.contains("are not app ids") })

        // Loaded again (the refresh), a refused value is neither fetched nor logged again.
        #expect(restarted.load())
        #expect(restarted.lookUp("expired") == nil)
        #expect(restarted.warnings.messages.count == 5)
    }

    @Test("with Redis down a provision faults and nothing is provisioned, so no instance answers a success it would lose")
    func redisDownFaults() throws {
        let server = try RedisServer()
        let instance = try Instance(server, commandTimeout: .seconds(1))
        defer { instance.link.close() }
        server.kill()
        guard case .failure(let refusal) = instance.provision("toot", try clientPEM()) else {
            Issue.record("a provision succeeded without Redis")
            return
        }
        #expect(refusal.description.contains("nothing was provisioned"))
        #expect(instance.apps.app(id: "toot") == nil)
        #expect(instance.lookUp("toot") == nil)
    }

    @Test("a PEM that fails the checks is refused before Redis sees it")
    func invalidPEMNeverReachesRedis() throws {
        let server = try RedisServer()
        let instance = try Instance(server)
        defer { instance.link.close() }
        guard case .failure = instance.provision("toot", Array("-----BEGIN CERTIFICATE-----\nnope\n".utf8)) else {
            Issue.record("a bad PEM was provisioned")
            return
        }
        #expect(instance.link.run("HLEN", FleetKeys.provisionedApps) == .success(.integer(0)))
    }
}
