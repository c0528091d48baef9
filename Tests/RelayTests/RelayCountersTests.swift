import Testing

@testable import Relay

@Suite("Relay counters")
struct RelayCountersTests {
    @Test("connections beyond the cap are refused and not counted")
    func connectionCap() {
        let counters = RelayCounters(maxConnections: 2, maxInFlight: 10)
        #expect(counters.openConnection())
        #expect(counters.openConnection())
        #expect(!counters.openConnection())
        #expect(counters.openConnections == 2)
        counters.closeConnection()
        #expect(counters.openConnection())
    }

    @Test("deliveries beyond MAX_IN_FLIGHT are refused and not counted")
    func inFlightCap() {
        let counters = RelayCounters(maxConnections: 2, maxInFlight: 1)
        #expect(counters.beginDelivery())
        #expect(!counters.beginDelivery())
        #expect(counters.inFlight == 1)
        counters.endDelivery()
        #expect(counters.inFlight == 0)
    }

    @Test("counters are exact under concurrent use")
    func concurrent() async {
        let counters = RelayCounters(maxConnections: 1_000_000, maxInFlight: 1_000_000)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1000 {
                        _ = counters.openConnection()
                        _ = counters.beginDelivery()
                    }
                    for _ in 0..<500 {
                        counters.closeConnection()
                        counters.endDelivery()
                    }
                }
            }
        }
        #expect(counters.openConnections == 4000)
        #expect(counters.inFlight == 4000)
    }
}
