import Locking
import Prometheus

/// Redis' side of the metrics, with REDIS_URL: whether each link is up
/// (`toot_relay_redis_connected{link}`) and its failures
/// (`toot_relay_redis_connection_failures_total{link}`), copied from the
/// links by the daemon's once-a-second tick. It takes each link's numbers,
/// not the link: Observability sits below the fleet, so the fleet's
/// modules can log through it.
public final class FleetMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let published = Locked<[String: Int]>([:])

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// One link's state: `failures` counts since start (connection
    /// attempts that failed and connections lost).
    public func publish(link name: String, isConnected: Bool, failures: Int) {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "toot_relay", metricName: "redis_connected", unitName: "",
                helpText: "1 while the link to Redis (REDIS_URL) is up, else 0"),
            labels: [("link", name)])
            .set(to: isConnected ? 1 : 0)
        let before = published.withLock { state in
            defer { state[name] = failures }
            return state[name] ?? 0
        }
        let counter = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "toot_relay", metricName: "redis_connection_failures", unitName: "total",
                helpText: "Connection attempts to Redis that failed and connections to it lost"),
            labels: [("link", name)])
        if failures > before { counter.increment(by: Int64(failures - before)) }
    }
}
