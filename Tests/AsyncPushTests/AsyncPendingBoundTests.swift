import Testing

@testable import AsyncPush

@Suite("The asynchronous queue's bound")
struct AsyncPendingBoundTests {
    @Test("a request's tokens are reserved all together or not at all")
    func allOrNothing() {
        let bound = AsyncPendingBound(maxPending: 10)
        #expect(bound.reserve(7))
        #expect(!bound.reserve(4))
        #expect(bound.pending == 7, "a refused reservation takes no place")
        #expect(bound.reserve(3))
        #expect(bound.pending == 10)
        #expect(!bound.reserve(1))
        bound.release(2)
        #expect(bound.pending == 8)
        #expect(bound.reserve(2))
        #expect(!bound.reserve(1))
    }

    @Test("a reservation larger than the bound is refused even when nothing is pending")
    func largerThanBound() {
        let bound = AsyncPendingBound(maxPending: 3)
        #expect(!bound.reserve(4))
        #expect(bound.reserve(0))
        #expect(bound.pending == 0)
    }

    @Test("concurrent reservations never pass the bound and the count is exact")
    func concurrent() async {
        let bound = AsyncPendingBound(maxPending: 1_000)
        let reserved = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mine = 0
                    for _ in 0..<100 {
                        if bound.reserve(3) { mine += 3 }
                    }
                    return mine
                }
            }
            return await group.reduce(0, +)
        }
        #expect(reserved == bound.pending)
        #expect(bound.pending == 999, "2,400 places asked for in threes: the bound's last multiple of three")
        bound.release(bound.pending)
        #expect(bound.pending == 0)
    }
}
