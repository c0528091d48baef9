import Testing
@testable import HTTP2Client

/// The pool's two orders: waiting for a stream, waiting for an answer.
@Suite("HTTP/2 pool queues")
struct PooledRequestQueuesTests {
    @Test("answer deadlines: first in, first out; finished requests leave holes that are skipped and released")
    func answerDeadlines() throws {
        var deadlines = AnswerDeadlines()
        let requests = (0..<3000).map { TestRequest($0) }
        #expect(deadlines.first == nil && deadlines.isEmpty)
        for request in requests { deadlines.append(request) }
        #expect(deadlines.count == 3000)
        // A finished request in the middle leaves a hole; the front is untouched.
        deadlines.remove(requests[1])
        #expect(deadlines.first === requests[0])
        #expect(deadlines.count == 2999)
        // Removing the front drops the hole behind it as well.
        deadlines.remove(requests[0])
        #expect(deadlines.first === requests[2])
        // Removing twice, or removing what is no longer tracked, is ignored.
        deadlines.remove(requests[0])
        #expect(deadlines.count == 2998)
        // Past the compaction threshold (1024 at the front) positions still resolve.
        for index in 2..<1500 { #expect(deadlines.popFirst() === requests[index]) }
        for index in stride(from: 2999, through: 1600, by: -2) { deadlines.remove(requests[index]) }
        #expect(deadlines.count == 1500 - 700)
        var popped: [Int] = []
        while let request = deadlines.popFirst() {
            popped.append(requests.firstIndex { $0 === request } ?? -1)
        }
        let expected = Array(1500..<1600) + Array(stride(from: 1600, to: 3000, by: 2))
        #expect(popped == expected)
        #expect(deadlines.isEmpty && deadlines.first == nil && deadlines.popFirst() == nil)
        // Reused after emptying: sequence numbers go on.
        deadlines.append(requests[5])
        deadlines.append(requests[6])
        deadlines.remove(requests[6])
        #expect(deadlines.popFirst() === requests[5])
        #expect(deadlines.isEmpty)
    }

    @Test("the request queue is first in, first out and skips finished entries")
    func requestQueue() throws {
        var queue = RequestQueue()
        let requests = (0..<3000).map { TestRequest($0) }
        for request in requests { queue.append(request) }
        requests[1].phase = .finished
        #expect(queue.popFirst() === requests[0])
        #expect(queue.popFirst() === requests[2])
        for index in 3..<3000 { #expect(queue.popFirst() === requests[index]) }
        #expect(queue.popFirst() == nil)
        #expect(queue.isEmpty)
    }

    @Test("a request put back goes before every other; finished entries are dropped on the way")
    func putBackFirst() throws {
        var queue = RequestQueue()
        let requests = (0..<4).map { TestRequest($0) }
        queue.append(requests[1])
        queue.append(requests[2])
        queue.append(requests[3])
        requests[2].phase = .finished
        queue.putBackFirst(requests[0])
        #expect(queue.popFirst() === requests[0])
        #expect(queue.popFirst() === requests[1])
        #expect(queue.popFirst() === requests[3])
        #expect(queue.popFirst() == nil)
    }
}
