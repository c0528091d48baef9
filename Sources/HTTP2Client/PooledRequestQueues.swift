import EventLoop

// The two orders a pool keeps its requests in: waiting for a stream
// (`RequestQueue`) and waiting for an answer (`AnswerDeadlines`). Both are
// FIFOs of `PooledRequest` that skip those finished meanwhile.

/// First-in first-out requests; entries finished while waiting (answer
/// timeout) are skipped when reached.
struct RequestQueue {
    private var requests = FIFO<PooledRequest>()

    var isEmpty: Bool { requests.isEmpty }

    mutating func append(_ request: PooledRequest) {
        requests.append(request)
    }

    /// The request `popFirst` would return, left in place.
    mutating func peekFirst() -> PooledRequest? {
        while let request = requests.first, request.isFinished { requests.popFirst() }
        return requests.first
    }

    mutating func popFirst() -> PooledRequest? {
        _ = peekFirst()
        return requests.popFirst()
    }

    /// Puts `request` before every other (a submit the session refused).
    /// Rare: the queue is copied, finished entries dropped on the way.
    mutating func putBackFirst(_ request: PooledRequest) {
        var front = RequestQueue()
        front.append(request)
        while let other = popFirst() { front.append(other) }
        self = front
    }
}

/// The answer deadlines of a pool's requests, in `send` order. Every request
/// of a pool has the same answer timeout, measured from `send` on the loop's
/// monotonic clock, so deadlines never decrease from front to back: one loop
/// timer set for the front serves them all, with no timer, closure or heap
/// entry per request. A request that finishes leaves a hole (O(1), through
/// the position it carries); holes reaching the front are dropped at once,
/// so a finished request is released as soon as everything sent before it
/// has finished too.
struct AnswerDeadlines {
    private var requests = FIFO<PooledRequest>()

    /// Requests tracked (holes excluded).
    var count: Int { requests.count }

    var isEmpty: Bool { requests.isEmpty }

    /// The request sent first among those tracked: the earliest deadline.
    var first: PooledRequest? { requests.first }

    mutating func append(_ request: PooledRequest) {
        request.deadlineSequence = requests.append(request)
    }

    /// Stops tracking `request` (it finished); ignored when not tracked.
    mutating func remove(_ request: PooledRequest) {
        guard let position = request.deadlineSequence else { return }
        request.deadlineSequence = nil
        requests.remove(at: position)
    }

    mutating func popFirst() -> PooledRequest? {
        let request = requests.popFirst()
        request?.deadlineSequence = nil
        return request
    }
}
