import Testing
@testable import EventLoop

@Suite("FIFO")
struct FIFOTests {
    @Test("elements leave in the order they came, across compactions of the front")
    func order() {
        var queue = FIFO<Int>()
        #expect(queue.isEmpty && queue.first == nil && queue.popFirst() == nil)
        for value in 0..<3000 { queue.append(value) }
        #expect(queue.count == 3000)
        for value in 0..<2000 { #expect(queue.popFirst() == value) }
        for value in 3000..<3500 { queue.append(value) }
        var rest: [Int] = []
        while let value = queue.popFirst() { rest.append(value) }
        #expect(rest == Array(2000..<3500))
        #expect(queue.isEmpty && queue.count == 0)
    }

    @Test("removal by position leaves a hole the front skips, and positions survive compaction")
    func removalByPosition() {
        var queue = FIFO<Int>()
        let positions = (0..<3000).map { queue.append($0) }
        #expect(queue.remove(at: positions[1]) == 1)
        #expect(queue.remove(at: positions[1]) == nil)
        #expect(queue.first == 0)
        #expect(queue.remove(at: positions[0]) == 0)
        #expect(queue.first == 2)
        #expect(queue.count == 2998)
        for value in 2..<1500 { #expect(queue.popFirst() == value) }
        #expect(queue.remove(at: positions[0]) == nil)
        #expect(queue.remove(at: positions[2999]) == 2999)
        #expect(queue.remove(at: positions[1600]) == 1600)
        var rest: [Int] = []
        while let value = queue.popFirst() { rest.append(value) }
        #expect(rest == Array(1500..<1600) + Array(1601..<2999))
        // Positions go on after the queue empties: an old one matches nothing.
        let next = queue.append(7)
        #expect(next == 3000)
        #expect(queue.remove(at: positions[5]) == nil)
        #expect(queue.remove(at: next) == 7)
        #expect(queue.isEmpty)
    }

    @Test("iteration yields what is queued, in order, holes skipped, without removing it")
    func iteration() {
        var queue = FIFO<Int>()
        let positions = (0..<2000).map { queue.append($0) }
        for value in 0..<1200 { #expect(queue.popFirst() == value) }
        queue.remove(at: positions[1500])
        #expect(Array(queue) == Array(1200..<1500) + Array(1501..<2000))
        #expect(queue.count == 799 && queue.first == 1200)
    }

    @Test("removeAll empties the queue; positions handed out before match nothing after")
    func removeAll() {
        var queue = FIFO<Int>()
        let positions = (0..<10).map { queue.append($0) }
        queue.popFirst()
        queue.removeAll()
        #expect(queue.isEmpty && queue.first == nil && Array(queue).isEmpty)
        let next = queue.append(42)
        #expect(next == 10)
        #expect(queue.remove(at: positions[9]) == nil)
        #expect(Array(queue) == [42])
    }
}
