import Testing

@testable import Delivery

@Suite("Notifications in flight")
struct InFlightDeliveriesTests {
    @Test("deliveries beyond MAX_IN_FLIGHT are refused and not counted")
    func inFlightCap() {
        let counters = InFlightDeliveries(maxInFlight: 1)
        #expect(counters.beginDelivery())
        #expect(!counters.beginDelivery())
        #expect(counters.inFlight == 1)
        counters.endDelivery()
        #expect(counters.inFlight == 0)
    }

    @Test("the count is exact under concurrent use")
    func concurrent() async {
        let counters = InFlightDeliveries(maxInFlight: 1_000_000)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1000 {
                        _ = counters.beginDelivery()
                    }
                    for _ in 0..<500 {
                        counters.endDelivery()
                    }
                }
            }
        }
        #expect(counters.inFlight == 4000)
    }
}
