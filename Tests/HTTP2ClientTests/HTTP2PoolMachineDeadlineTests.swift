import Testing
@testable import HTTP2Client

@Suite("HTTP/2 pool machine: answer deadlines")
struct HTTP2PoolMachineDeadlineTests {
    static let second = PoolHarness.second
    static let millisecond = PoolHarness.millisecond

    /// Two silent requests sent 150 ms apart among answered ones: each
    /// times out at its own deadline, in send order, with one timer.
    @Test("one timer for the front: timeouts fire in send order, each at its deadline; answered requests are skipped")
    func deadlinesInSendOrder() {
        let timeout = 400 * Self.millisecond
        var pool = PoolHarness(PoolHarness.limits(answerTimeout: timeout))
        let start = pool.now
        let r = PoolHarness.requests(4)
        let (silentFirst, answered1, silentLater, answered2) = (r[0], r[1], r[2], r[3])
        #expect(pool.send(silentFirst) == [.armDeadlineTimer(at: start + timeout), .openConnection(c0)])
        #expect(pool.ready(c0) == [.submit(silentFirst, on: c0)])
        #expect(pool.send(answered1) == [.submit(answered1, on: c0)])
        pool.now = start + 150 * Self.millisecond
        #expect(pool.send(silentLater) == [.submit(silentLater, on: c0)])
        #expect(pool.send(answered2) == [.submit(answered2, on: c0)])
        #expect(pool.finished(answered1) == [.complete(answered1, PoolHarness.accepted)])
        #expect(pool.finished(answered2) == [.complete(answered2, PoolHarness.accepted)])
        // A timer that fires early changes nothing but is set again.
        pool.now = start + timeout - 1
        #expect(pool.deadlineFired() == [.armDeadlineTimer(at: start + timeout)])
        pool.now = start + timeout
        #expect(pool.deadlineFired() == [
            .cancelStream(1, on: c0), .complete(silentFirst, .failed(.answerTimedOut)),
            .armDeadlineTimer(at: start + 150 * Self.millisecond + timeout),
        ])
        pool.now = start + 150 * Self.millisecond + timeout
        #expect(pool.deadlineFired() == [
            .cancelStream(5, on: c0), .complete(silentLater, .failed(.answerTimedOut)),
        ])
        #expect(pool.machine.inFlightCount == 0)
        // Nothing is left to time out.
        pool.now += 3600 * Self.second
        #expect(pool.deadlineFired() == [])
    }

    @Test("the answer timeout covers the time spent waiting for a connection")
    func deadlineWhileQueued() {
        var pool = PoolHarness()
        let start = pool.now
        let r = PoolHarness.requests(2)
        _ = pool.send(r[0])
        pool.now += 100 * Self.millisecond
        #expect(pool.send(r[1]) == [])
        pool.now = start + 8 * Self.second
        #expect(pool.deadlineFired() == [
            .complete(r[0], .failed(.answerTimedOut)),
            .armDeadlineTimer(at: start + 100 * Self.millisecond + 8 * Self.second),
        ])
        #expect(pool.machine.waitingCount == 1)
        // The timed-out request is skipped when its turn comes.
        #expect(pool.ready(c0) == [.submit(r[1], on: c0)])
    }

    @Test("a connection loss finishes its requests and clears their deadlines: no timeout fires later")
    func lossClearsDeadlines() {
        var pool = PoolHarness(PoolHarness.limits(answerTimeout: 600 * Self.millisecond))
        let start = pool.now
        let r = pool.submitFirst(5)
        for request in r.dropFirst() { #expect(pool.send(request) == [.submit(request, on: c0)]) }
        let lost = PooledAnswer.failed(.streamFailed("connection lost: server closed the connection"))
        for request in r { #expect(pool.finished(request, lost) == [.complete(request, lost)]) }
        #expect(pool.closed(c0) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        pool.now = start + 800 * Self.millisecond
        #expect(pool.deadlineFired() == [])
        #expect(pool.machine.inFlightCount == 0)
    }

    @Test("a deadline beyond the clock's range is the end of time")
    func deadlineOverflow() {
        var pool = PoolHarness()
        pool.now = .max - 10
        let r = PoolHarness.requests(1)
        #expect(pool.send(r[0]) == [.armDeadlineTimer(at: .max), .openConnection(c0)])
    }
}
