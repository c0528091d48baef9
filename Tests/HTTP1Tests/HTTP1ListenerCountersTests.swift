import Testing

@testable import HTTP1

@Suite("Listener counters")
struct HTTP1ListenerCountersTests {
    @Test("connections beyond the cap are refused and not counted")
    func connectionCap() {
        let counters = HTTP1ListenerCounters(maxConnections: 2)
        #expect(counters.openConnection())
        #expect(counters.openConnection())
        #expect(!counters.openConnection())
        #expect(counters.openConnections == 2)
        counters.closeConnection()
        #expect(counters.openConnection())
    }

    @Test("counters are exact under concurrent use")
    func concurrent() async {
        let counters = HTTP1ListenerCounters(maxConnections: 1_000_000)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1000 {
                        _ = counters.openConnection()
                        counters.recordAnswer()
                    }
                    for _ in 0..<500 {
                        counters.closeConnection()
                    }
                }
            }
        }
        #expect(counters.openConnections == 4000)
        #expect(counters.requestsAnswered == 8000)
    }
}
