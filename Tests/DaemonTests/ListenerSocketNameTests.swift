import EventLoop
@testable import Daemon
import RelayCore
import Testing

@Suite("The listeners' systemd socket names")
struct ListenerSocketNameTests {
    @Test("the names a .socket unit gives in FileDescriptorName=")
    func names() {
        #expect(ListenerSocketName.all == ["webpush", "api", "metrics"])
    }

    @Test("a socket for a listener its variable leaves off is refused, naming the variable", arguments: [
        (ListenerSocketName.webPush, [String: String](), nil as String?),
        (.api, [:], "API_PORT"),
        (.api, ["API_PORT": "8081"], nil),
        (.metrics, [:], "METRICS_PORT"),
        (.metrics, ["METRICS_PORT": "9469"], nil),
        (.metrics, ["API_PORT": "8081"], "METRICS_PORT"),
    ])
    func switchedOff(name: ListenerSocketName, variables: [String: String], variable: String?) throws {
        let problem = name.problem(with: try Configuration(environment: variables))
        #expect(problem.map { $0.contains("socket named `\(name.rawValue)`") && $0.contains("\(variable!) is not set") }
            ?? (variable == nil))
    }

    @Test("a listener on a passed socket is configured at the socket's address and port", arguments: [
        (ListenerSocketName.webPush, "::", 42069),
        (.api, "0.0.0.0", 8081),
        (.metrics, "127.0.0.1", 9469),
    ])
    func configuredAtTheSocket(name: ListenerSocketName, ip: String, port: Int) throws {
        let before = try Configuration(environment: ["PORT": "1", "BIND": "10.0.0.1", "API_PORT": "2", "METRICS_PORT": "3"])
        let address = try #require(SocketAddress(ip: ip, port: UInt16(port)))
        let after = name.configuration(before, listeningOn: address)
        func listeners(_ configuration: Configuration) -> [String] {
            ["\(configuration.bindAddress ?? "-") \(configuration.port)",
             "\(configuration.apiBindAddress) \(configuration.apiPort ?? 0)",
             "\(configuration.metricsBindAddress) \(configuration.metricsPort ?? 0)"]
        }
        var expected = listeners(before)
        expected[ListenerSocketName.allCases.firstIndex(of: name)!] = "\(ip) \(port)"
        #expect(listeners(after) == expected)
    }

    @Test("an API socket beyond loopback without keys is refused as API_BIND would be")
    func apiExposureSeesTheSocket() throws {
        let configured = try Configuration(environment: ["API_PORT": "8081"])
        #expect(apiExposureProblem(configuration: configured, keyring: APIKeyring.empty) == nil)
        let passed = ListenerSocketName.api.configuration(configured, listeningOn: try #require(SocketAddress(ip: "0.0.0.0", port: 8081)))
        #expect(apiExposureProblem(configuration: passed, keyring: APIKeyring.empty)?.hasPrefix("API_BIND: 0.0.0.0") == true)
    }
}
