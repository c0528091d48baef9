// The APNs client's hosts, timeouts and limits, with their defaults: the
// one home of those defaults. The daemon's `Configuration` starts from
// them and overrides what its environment variables set (the README's
// variable table is printed from the same values).

/// What the APNs client's connections and pools obey, the same for every
/// credential and loop.
public struct APNsSettings: Sendable, Equatable {
    public var productionHost = HostAndPort(host: "api.push.apple.com", port: 443)
    public var developmentHost = HostAndPort(host: "api.sandbox.push.apple.com", port: 443)
    /// Channel management for Live Activity broadcasts has hosts of its own
    /// (Apple, "Sending channel management requests to APNs").
    public var broadcastProductionHost = HostAndPort(host: "api-manage-broadcast.push.apple.com", port: 2196)
    public var broadcastDevelopmentHost = HostAndPort(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
    /// Resolve + TCP connect + TLS handshake + the server's first SETTINGS.
    public var connectTimeout: Duration = .seconds(5)
    /// From `send` to the answer (WIRE.md §5). Mastodon gives up
    /// after 10 s; the relay answers before it does.
    public var answerTimeout: Duration = .seconds(8)
    public var pingInterval: Duration = .seconds(60)
    public var pingTimeout: Duration = .seconds(5)
    /// Connections per credential and environment (per client, i.e. per loop).
    public var maxConnectionsPerEnvironment = 4
    /// Requests waiting for a stream, per credential and environment;
    /// beyond: `.overloaded`.
    public var maxQueuedPerEnvironment = 20_000
    /// A pool (one credential, one environment) that carried nothing for
    /// this long closes its connections; the next request opens them again.
    public var idleTimeout: Duration = .seconds(3600)
    /// How often idle and retired pools are looked for.
    public var idleSweepInterval: Duration = .seconds(30)
    /// Backoff after a failed connection attempt: base·2^(n−1), capped,
    /// with half of it random.
    public var backoffBase: Duration = .milliseconds(500)
    public var backoffCap: Duration = .seconds(15)

    public init() {}

    public func host(for environment: APNsEnvironment) -> HostAndPort {
        environment == .production ? productionHost : developmentHost
    }

    /// Where a broadcast API call to `host` goes in `environment`.
    public func host(_ host: APNsBroadcastHost, for environment: APNsEnvironment) -> HostAndPort {
        switch host {
        case .notifications: self.host(for: environment)
        case .channelManagement: environment == .production ? broadcastProductionHost : broadcastDevelopmentHost
        }
    }
}
