import APNsCore
import HTTPCore
import APNs
@testable import Daemon
import HTTP1
import RelayCore
import Testing

@Suite("Listener options")
struct ListenerOptionsTests {
    @Test("the listener part of the configuration carries over (WIRE.md §5)")
    func fromConfiguration() throws {
        let configuration = try Configuration(environment: [
            "PORT": "8443", "BIND": "::1", "MAX_HEADER_BYTES": "4096", "MAX_BODY_BYTES": "2048",
            "HEADER_TIMEOUT": "1.5", "BODY_TIMEOUT": "2", "KEEPALIVE_TIMEOUT": "30", "MAX_CONNECTIONS": "10",
            "MAX_IN_FLIGHT": "20", "REUSE_PORT": "0",
        ])
        let options = ListenerOptions(configuration: configuration)
        #expect(options.port == 8443)
        #expect(options.bindAddress == "::1")
        #expect(!options.reusePort)
        #expect(options.limits == HTTP1Limits(maxHeaderBytes: 4096, maxBodyBytes: 2048))
        #expect(options.timeouts == .init(header: .milliseconds(1500), body: .seconds(2), keepAlive: .seconds(30)))
        #expect(options.maxConnections == 10)
        // MAX_IN_FLIGHT is no listener option: the daemon gives it to the
        // handlers' InFlightDeliveries.
        #expect(configuration.maxInFlight == 20)
    }

    @Test("defaults are the README configuration table's")
    func defaults() {
        let configuration = Configuration()
        let options = ListenerOptions(configuration: configuration)
        #expect(options.port == 42069)
        #expect(options.bindAddress == nil)
        #expect(options.reusePort)
        #expect(options.limits == HTTP1Limits(maxHeaderBytes: 16384, maxBodyBytes: 8192))
        #expect(options.timeouts == .init(header: .seconds(10), body: .seconds(10), keepAlive: .seconds(75)))
        #expect(options.maxConnections == 16_384)
        #expect(configuration.maxInFlight == 20_000)
    }
}

@Suite("APNs settings")
struct APNsSettingsTests {
    @Test("the APNs part of the configuration carries over; a pool's queue is bounded by MAX_IN_FLIGHT")
    func fromConfiguration() throws {
        let configuration = try Configuration(environment: [
            "APNS_PRODUCTION_HOST": "127.0.0.1:2197", "APNS_DEVELOPMENT_HOST": "127.0.0.1:2198",
            "APNS_CONNECT_TIMEOUT": "3", "APNS_TIMEOUT": "1.5", "APNS_PING_INTERVAL": "30", "APNS_PING_TIMEOUT": "4",
            "APNS_MAX_CONNECTIONS": "6", "MAX_IN_FLIGHT": "250", "APNS_IDLE_TIMEOUT": "120",
            "APNS_BROADCAST_PRODUCTION_HOST": "127.0.0.1:2199", "APNS_BROADCAST_DEVELOPMENT_HOST": "127.0.0.1:2200",
        ])
        let settings = APNsSettings(configuration: configuration)
        #expect(settings.productionHost == HostAndPort(host: "127.0.0.1", port: 2197))
        #expect(settings.developmentHost == HostAndPort(host: "127.0.0.1", port: 2198))
        #expect(settings.host(.channelManagement, for: .production) == HostAndPort(host: "127.0.0.1", port: 2199))
        #expect(settings.host(.channelManagement, for: .development) == HostAndPort(host: "127.0.0.1", port: 2200))
        #expect(settings.host(.notifications, for: .development) == settings.developmentHost)
        #expect(settings.connectTimeout == .seconds(3))
        #expect(settings.answerTimeout == .milliseconds(1500))
        #expect(settings.pingInterval == .seconds(30))
        #expect(settings.pingTimeout == .seconds(4))
        #expect(settings.maxConnectionsPerEnvironment == 6)
        #expect(settings.maxQueuedPerEnvironment == 250)
        #expect(settings.idleTimeout == .seconds(120))
    }
}
