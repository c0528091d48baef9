import RelayCore
import Testing
import TestSupport
@testable import APNsEmulator

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
