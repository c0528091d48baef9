import Prometheus
@testable import Observability
import Testing

@Suite("A loop's counters by app and slot")
struct AppCounterCacheTests {
    /// A cache over a real registry that counts how often it is asked to make a counter.
    final class Maker {
        let registry = PrometheusCollectorRegistry()
        var made: [String] = []

        func make(app: String, slot: Int) -> Counter {
            made.append("\(app)/\(slot)")
            return registry.makeCounter(
                descriptor: MetricNameDescriptor(metricName: "cached", unitName: "total", helpText: "test"),
                labels: [("app", app), ("slot", String(slot))])
        }
    }

    @Test("each app and slot is made once, then the same counter comes back, whatever the order of apps")
    func makesOncePerAppAndSlot() {
        let maker = Maker()
        var cache = AppCounterCache(slots: 3)
        let calls: [(String, Int)] = [("a", 0), ("a", 0), ("b", 0), ("a", 0), ("a", 2), ("b", 0), ("b", 1), ("a", 2)]
        var first: [String: Counter] = [:]
        for (app, slot) in calls {
            let counter = cache.counter(app: app, slot: slot) { maker.make(app: app, slot: slot) }
            counter.increment()
            let key = "\(app)/\(slot)"
            if let earlier = first[key] { #expect(earlier === counter, "\(key) came back as another counter") }
            first[key] = counter
        }
        #expect(maker.made == ["a/0", "b/0", "a/2", "b/1"])
        #expect(cache.apps == 2)
        var exposition: [UInt8] = []
        maker.registry.emit(into: &exposition)
        let text = String(decoding: exposition, as: UTF8.self)
        #expect(text.contains(#"cached_total{app="a",slot="0"} 3"#))
        #expect(text.contains(#"cached_total{app="b",slot="0"} 2"#))
        #expect(text.contains(#"cached_total{app="a",slot="2"} 2"#))
    }

    @Test("removeAll forgets every app, the app counted last too, so counters are asked for again")
    func removeAllForgets() {
        let maker = Maker()
        var cache = AppCounterCache(slots: 1)
        _ = cache.counter(app: "a", slot: 0) { maker.make(app: "a", slot: 0) }
        cache.removeAll()
        #expect(cache.apps == 0)
        _ = cache.counter(app: "a", slot: 0) { maker.make(app: "a", slot: 0) }
        #expect(maker.made == ["a/0", "a/0"])
        #expect(cache.apps == 1)
    }
}
