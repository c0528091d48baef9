import APNsCore
@testable import APNsEmulator
import Foundation
import TestSupport
import Testing

@Suite("Emulator configuration")
struct ConfigurationTests {
    @Test("defaults: loopback, any port, one thread, no recording, immediate 200s with 1000 streams")
    func defaults() {
        let configuration = APNsEmulatorConfiguration(certificateFile: "c", privateKeyFile: "k", authentication: .none)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 0)
        #expect(configuration.threads == 1)
        #expect(!configuration.recordNotifications)
        #expect(configuration.behavior == APNsEmulatorBehavior(
            forcedAction: nil, forcedCount: nil, responseDelay: .zero, maxConcurrentStreams: 1000,
            initialMaxConcurrentStreams: nil, goAwayAfterStreams: nil, dropAfterStreams: nil))
    }

    @Test("bad configurations are typed errors at init, never crashes")
    func invalid() throws {
        var configuration = try Fixture.configuration()
        configuration.threads = 0
        #expect(throws: APNsEmulatorError.self) { try APNsEmulator(configuration: configuration) }

        configuration = try Fixture.configuration()
        configuration.certificateFile = "/nonexistent/server.pem"
        #expect(throws: APNsEmulatorError.self) { try APNsEmulator(configuration: configuration) }

        configuration = try Fixture.configuration()
        configuration.authentication = .token(publicKeyPEM: Array("not a key".utf8), keyID: "K", teamID: "T")
        #expect(throws: APNsEmulatorError.self) { try APNsEmulator(configuration: configuration) }

        configuration = try Fixture.configuration()
        configuration.authentication = .token(
            publicKeyPEM: try TestCertificates.bytes(TestCertificates.authKeyPublic), keyID: "", teamID: "T")
        #expect(throws: APNsEmulatorError.self) { try APNsEmulator(configuration: configuration) }

        configuration = try Fixture.configuration()
        configuration.host = "not-an-ip"
        let emulator = try APNsEmulator(configuration: configuration)
        #expect(throws: APNsEmulatorError.self) { try emulator.start() }
    }

    @Test("start() twice is refused; the port is known once started")
    func startTwice() throws {
        let emulator = try APNsEmulator(configuration: Fixture.configuration())
        #expect(emulator.port == 0)
        try emulator.start()
        defer { emulator.stop() }
        #expect(emulator.port != 0)
        #expect(throws: APNsEmulatorError.self) { try emulator.start() }
    }
}

@Suite("Provider key configuration")
struct ProviderKeyConfigurationTests {
    struct BadKeys: CustomTestStringConvertible, Sendable {
        var name: String
        var keys: @Sendable () throws -> [APNsEmulatorProviderKey]
        /// Part of the error's one-line description.
        var message: String
        var testDescription: String { name }
    }

    static func key(_ keyID: String = "KEYA", teamID: String = "TEAM", file: String = TestCertificates.authKeyPublic,
                    environments: Set<APNsEnvironment> = [.production, .development],
                    topics: Set<String>? = nil) throws -> APNsEmulatorProviderKey {
        APNsEmulatorProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: try TestKeys.bytes(file),
                                environments: environments, topics: topics)
    }

    static let badKeys: [BadKeys] = [
        BadKeys(name: "no key at all", keys: { [] }, message: "at least one provider key"),
        BadKeys(name: "an empty key id", keys: { [try key("")] }, message: "needs a key id and a team id"),
        BadKeys(name: "an empty team id", keys: { [try key(teamID: "")] }, message: "needs a key id and a team id"),
        BadKeys(name: "one key id twice", keys: { [try key(), try key(teamID: "OTHER")] },
                message: "provider key id KEYA is given twice"),
        BadKeys(name: "no environment", keys: { [try key(environments: [])] }, message: "KEYA is valid in no environment"),
        BadKeys(name: "an empty topic list", keys: { [try key(topics: [])] }, message: "KEYA covers no topic"),
        BadKeys(name: "a topic with a space", keys: { [try key(topics: ["com.example app"])] },
                message: "\"com.example app\" is not a topic"),
        BadKeys(name: "a P-384 public key", keys: { [try key(file: TestKeys.p384Public)] },
                message: "provider key KEYA: unsupported key: ES256 needs an EC P-256 key"),
        BadKeys(name: "an Ed25519 public key", keys: { [try key(file: TestKeys.ed25519Public)] },
                message: "provider key KEYA: unsupported key: ES256 needs an EC P-256 key"),
        BadKeys(name: "a file that is not PEM", keys: { [try key(file: TestKeys.notAKey)] },
                message: "provider key KEYA: invalid PEM"),
    ]

    @Test("a bad provider key is an error at init that names it", arguments: badKeys)
    func badKey(_ bad: BadKeys) throws {
        var configuration = try Fixture.configuration()
        configuration.authentication = .providerKeys(try bad.keys())
        do {
            _ = try APNsEmulator(configuration: configuration)
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains(bad.message), "\(error.description)")
        }
    }

    @Test("the environment played defaults to production; .token(publicKeyPEM:keyID:teamID:) is one key for both environments and every topic")
    func defaults() throws {
        let configuration = APNsEmulatorConfiguration(certificateFile: "c", privateKeyFile: "k", authentication: .none)
        #expect(configuration.environment == .production)
        let pem = Array("pem".utf8)
        #expect(APNsEmulatorAuthentication.token(publicKeyPEM: pem, keyID: "K", teamID: "T")
            == .providerKeys([APNsEmulatorProviderKey(keyID: "K", teamID: "T", publicKeyPEM: pem,
                                                      environments: [.production, .development], topics: nil)]))
    }

    struct Specification: CustomTestStringConvertible, Sendable {
        var text: String
        var expected: Result<Parsed, Message>
        var testDescription: String { text }

        struct Parsed: Equatable, Sendable {
            var keyID: String
            var teamID: String
            var environments: Set<APNsEnvironment>
            var topics: Set<String>?
        }

        struct Message: Error, Equatable, Sendable {
            var fragment: String
            init(_ fragment: String) { self.fragment = fragment }
        }
    }

    /// `PEM` stands for the script's public key file.
    static let specifications: [Specification] = [
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM",
                      expected: .success(.init(keyID: "K1", teamID: "T1", environments: [.production, .development]))),
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM,environment=development",
                      expected: .success(.init(keyID: "K1", teamID: "T1", environments: [.development]))),
        Specification(text: "environment=production,public-key=PEM,team-id=T1,key-id=K1,environment=development",
                      expected: .success(.init(keyID: "K1", teamID: "T1", environments: [.production, .development]))),
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM,topic=com.a,topic=com.b",
                      expected: .success(.init(keyID: "K1", teamID: "T1", environments: [.production, .development],
                                               topics: ["com.a", "com.b"]))),
        Specification(text: "key-id=K1,team-id=T1", expected: .failure(.init("key-id, team-id and public-key are required"))),
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM,", expected: .failure(.init("\"\" is not name=value"))),
        Specification(text: "K1:T1:PEM", expected: .failure(.init("\"K1:T1:PEM\" is not name=value"))),
        Specification(text: "key-id=,team-id=T1,public-key=PEM", expected: .failure(.init("key-id is empty"))),
        Specification(text: "key-id=K1,key-id=K2,team-id=T1,public-key=PEM", expected: .failure(.init("key-id given twice"))),
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM,environment=sandbox",
                      expected: .failure(.init("environment must be production or development, not \"sandbox\""))),
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM,topic=a b", expected: .failure(.init("\"a b\" is not a topic"))),
        Specification(text: "key-id=K1,team-id=T1,public-key=PEM,scope=team",
                      expected: .failure(.init("unknown field \"scope\" (known: key-id, team-id, public-key, environment, topic)"))),
        Specification(text: "key-id=K1,team-id=T1,public-key=/nonexistent/key.pem",
                      expected: .failure(.init("provider key K1: cannot read /nonexistent/key.pem: No such file or directory"))),
    ]

    @Test("the --provider-key form is read field by field; every mistake is named", arguments: specifications)
    func specification(_ specification: Specification) throws {
        let pemPath = try TestCertificates.path(TestCertificates.authKeyPublic)
        let text = specification.text.replacingOccurrences(of: "=PEM", with: "=" + pemPath)
        switch specification.expected {
        case .success(let parsed):
            let key = try APNsEmulatorProviderKey(specification: text)
            #expect(Specification.Parsed(keyID: key.keyID, teamID: key.teamID, environments: key.environments,
                                         topics: key.topics) == parsed)
            #expect(key.publicKeyPEM == (try TestCertificates.bytes(TestCertificates.authKeyPublic)))
        case .failure(let message):
            do {
                _ = try APNsEmulatorProviderKey(specification: text)
                Issue.record("accepted")
            } catch {
                #expect(error.description.contains(message.fragment), "\(error.description)")
            }
        }
    }
}
