import Fleet
import Locking
import Prometheus

/// Redis' side of the metrics, with REDIS_URL: whether each link is up
/// (`toot_relay_redis_connected{link}`) and its failures
/// (`toot_relay_redis_connection_failures_total{link}`), copied from the
/// links by the daemon's once-a-second tick.
public final class FleetMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let published = Locked<[String: Int]>([:])

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    public func publish(links: [RedisLink]) {
        for link in links {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "toot_relay", metricName: "redis_connected", unitName: "",
                    helpText: "1 while the link to Redis (REDIS_URL) is up, else 0"),
                labels: [("link", link.name)])
                .set(to: link.isConnected ? 1 : 0)
            let failures = link.failureCount
            let before = published.withLock { state in
                defer { state[link.name] = failures }
                return state[link.name] ?? 0
            }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "toot_relay", metricName: "redis_connection_failures", unitName: "total",
                    helpText: "Connection attempts to Redis that failed and connections to it lost"),
                labels: [("link", link.name)])
            if failures > before { counter.increment(by: Int64(failures - before)) }
        }
    }
}
