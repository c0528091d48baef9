import EventLoop
import TestSupport
import Testing
@testable import Redis

typealias RedisAction = RedisConnectionMachine.Action

/// A machine, a clock, and each event as a function returning its actions.
struct MachineHarness {
    static let ms: UInt64 = 1_000_000
    static let host = RedisURL.Endpoint.tcp(host: "redis.internal", port: 6379)
    static let first = SocketAddress(ip: "10.0.0.7", port: 6379)!
    static let second = SocketAddress(ip: "10.0.0.8", port: 6379)!

    var machine: RedisConnectionMachine
    /// Loop time, nanoseconds; starts at 1 s.
    var now: UInt64 = 1_000_000_000

    static func settings() -> RedisConnectionSettings {
        var settings = RedisConnectionSettings()
        settings.connectTimeout = .milliseconds(2000)
        settings.commandTimeout = .milliseconds(1000)
        settings.reconnectBase = .milliseconds(100)
        settings.reconnectCap = .milliseconds(1000)
        settings.maxPendingCommands = 4
        return settings
    }

    init(endpoint: RedisURL.Endpoint = host, handshake: [String] = ["AUTH", "SELECT"],
         settings: RedisConnectionSettings = MachineHarness.settings(), jitter: [UInt64] = [0]) {
        machine = RedisConnectionMachine(endpoint: endpoint, handshake: handshake, settings: settings,
                                         random: FixedRandom(values: jitter))
    }

    mutating func advance(ms milliseconds: UInt64) { now += milliseconds * Self.ms }

    private mutating func collect(_ step: (inout RedisConnectionMachine, inout [RedisAction]) -> Void) -> [RedisAction] {
        var actions: [RedisAction] = []
        step(&machine, &actions)
        return actions
    }

    mutating func start() -> [RedisAction] { let now = now; return collect { $0.start(now: now, into: &$1) } }
    mutating func send() -> (RedisCommandID, [RedisAction]) {
        let now = now
        var id = RedisCommandID(rawValue: .max)
        let actions = collect { id = $0.send(now: now, into: &$1) }
        return (id, actions)
    }
    mutating func close() -> [RedisAction] { collect { $0.close(into: &$1) } }
    mutating func resolved(_ addresses: [SocketAddress], attempt: Int) -> [RedisAction] {
        let now = now
        return collect { $0.resolved(addresses, attempt: attempt, now: now, into: &$1) }
    }
    mutating func resolveFailed(_ reason: String, attempt: Int) -> [RedisAction] {
        let now = now
        return collect { $0.resolveFailed(reason, attempt: attempt, now: now, into: &$1) }
    }
    mutating func connectFailed(_ reason: String) -> [RedisAction] {
        let now = now
        return collect { $0.connectFailed(reason, now: now, into: &$1) }
    }
    mutating func connected() -> [RedisAction] { collect { $0.connected(into: &$1) } }
    mutating func reply(_ value: RedisValue) -> [RedisAction] {
        let now = now
        return collect { $0.replyReceived(value, now: now, into: &$1) }
    }
    mutating func protocolError(_ reason: String) -> [RedisAction] {
        let now = now
        return collect { $0.protocolError(reason, now: now, into: &$1) }
    }
    mutating func transportLost(_ reason: String) -> [RedisAction] {
        let now = now
        return collect { $0.transportLost(reason, now: now, into: &$1) }
    }
    mutating func connectTimerFired() -> [RedisAction] { let now = now; return collect { $0.connectTimerFired(now: now, into: &$1) } }
    mutating func reconnectTimerFired() -> [RedisAction] { let now = now; return collect { $0.reconnectTimerFired(now: now, into: &$1) } }
    mutating func commandTimerFired() -> [RedisAction] { let now = now; return collect { $0.commandTimerFired(now: now, into: &$1) } }

    /// Start, resolve, connect and log in: ready at `now`.
    mutating func ready() {
        _ = start()
        _ = resolved([Self.first], attempt: machine.attempt)
        _ = connected()
        for _ in machine.handshake { _ = reply(.status("OK")) }
        precondition(machine.state == .ready)
    }

    static func id(_ raw: UInt64) -> RedisCommandID { RedisCommandID(rawValue: raw) }
}
