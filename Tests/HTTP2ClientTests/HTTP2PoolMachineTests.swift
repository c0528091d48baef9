import Testing
@testable import HTTP2Client

@Suite("HTTP/2 pool machine")
struct HTTP2PoolMachineTests {
    static let second = PoolHarness.second
    static let millisecond = PoolHarness.millisecond

    // MARK: Queue and connections

    @Test("the first send opens a connection; requests wait for it in order and go once it is ready")
    func lazyConnect() {
        var pool = PoolHarness()
        let r = PoolHarness.requests(3)
        let start = pool.now
        #expect(pool.send(r[0]) == [.armDeadlineTimer(at: start + 8 * Self.second), .openConnection(c0)])
        // One connection being established at a time: the others wait.
        #expect(pool.send(r[1]) == [])
        #expect(pool.send(r[2]) == [])
        #expect(pool.machine.waitingCount == 3)
        #expect(pool.ready(c0) == [.submit(r[0], on: c0), .submit(r[1], on: c0), .submit(r[2], on: c0)])
        #expect(pool.machine.waitingCount == 0)
        #expect(pool.machine.inFlightCount == 3)
        #expect(r.map(\.phase) == [.inFlight(c0, streamID: 1), .inFlight(c0, streamID: 3), .inFlight(c0, streamID: 5)])
    }

    @Test("a send goes straight to a connection that takes it, but never ahead of requests that wait")
    func sendKeepsOrder() {
        var pool = PoolHarness()
        let r = pool.submitFirst(3, streams: 1)
        // c0 is full: r1 waits and a second connection opens.
        #expect(pool.send(r[1]) == [.openConnection(c1)])
        // A stream frees before c0 reports it: r2 still waits behind r1.
        pool.connections.table[c0]!.freeStreams = 1
        #expect(pool.send(r[2]) == [])
        #expect(pool.canTakeMore(c0) == [.submit(r[1], on: c0)])
        #expect(pool.machine.waitingCount == 1)
    }

    /// Two ready connections, each with one request on it; then each case
    /// sets what they can take and sends one more.
    @Test("a request goes to the first connection, in opening order, with a free stream and room for its body",
          arguments: [
              // (c0 state, c0 free streams, c0 window room, c1 free streams, taken by)
              (HTTP2ConnectionState.ready, 1, nil as Int?, 1, 0 as Int?),
              (.ready, 0, nil, 1, 1),
              (.ready, 1, 10, 1, 1),
              (.ready, 1, 10_000, 1, 0),
              (.draining, 5, nil, 1, 1),
              (.ready, 0, nil, 0, nil),
          ])
    func whichConnection(state: HTTP2ConnectionState, streams: Int, window: Int?, otherStreams: Int, takenBy: Int?) {
        var pool = PoolHarness()
        let r = pool.submitFirst(3, streams: 1)
        #expect(pool.send(r[1]) == [.openConnection(c1)])
        #expect(pool.ready(c1, streams: 1) == [.submit(r[1], on: c1)])
        pool.connections.table[c0] = FakeConnection(state: state, freeStreams: streams, windowRoom: window)
        pool.connections.table[c1]!.freeStreams = otherStreams
        let expected: [PoolAction] = takenBy.map { [.submit(r[2], on: PoolConnectionID(rawValue: $0))] } ?? []
        #expect(pool.send(r[2]) == expected)
        #expect(pool.machine.waitingCount == (takenBy == nil ? 1 : 0))
    }

    @Test("connections open one at a time, up to maxConnections; a draining one does not count")
    func oneAtATimeUpToMax() {
        var pool = PoolHarness(PoolHarness.limits(maxConnections: 2))
        let r = PoolHarness.requests(3)
        #expect(pool.send(r[0]).last == .openConnection(c0))
        #expect(pool.send(r[1]) == [])
        // r1 fits nowhere: the next connection opens.
        #expect(pool.ready(c0, streams: 1) == [.submit(r[0], on: c0), .openConnection(c1)])
        // c1 is still being established: no third.
        #expect(pool.send(r[2]) == [])
        // Two connections, the maximum: r2 waits.
        #expect(pool.ready(c1, streams: 1) == [.submit(r[1], on: c1)])
        #expect(pool.machine.waitingCount == 1)
        // GOAWAY on c0: it no longer counts, so another opens on the next pass.
        #expect(pool.goAway(c0) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [.openConnection(c2)])
        #expect(pool.ready(c2) == [.submit(r[2], on: c2)])
    }

    @Test("beyond maxQueued waiting requests, sends are refused as overloaded, on the next pass",
          arguments: [0, 2])
    func overloaded(maxQueued: Int) {
        var pool = PoolHarness(PoolHarness.limits(maxQueued: maxQueued))
        let r = PoolHarness.requests(maxQueued + 3)
        for request in r.prefix(maxQueued) { _ = pool.send(request) }
        #expect(pool.machine.waitingCount == maxQueued)
        for request in r.dropFirst(maxQueued) {
            #expect(pool.send(request) == [.completeOnNextPass(request, .overloaded)])
            #expect(request.isCompleted)
        }
        #expect(pool.machine.waitingCount == maxQueued)
    }

    // MARK: Resends

    @Test("requests handed back unprocessed go again on the next pass, before those that wait")
    func resendsGoFirst() {
        var pool = PoolHarness()
        let r = pool.submitFirst(3, streams: 2)
        #expect(pool.send(r[1]) == [.submit(r[1], on: c0)])
        #expect(pool.send(r[2]) == [.openConnection(c1)])
        // REFUSED_STREAM for r1 (its stream is free again).
        #expect(pool.returned([r[1]]) == [.scheduleDispatch])
        #expect(r[1].phase == .queued)
        #expect(pool.machine.inFlightCount == 1)
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[1], on: c0)])
        #expect(r[1].resendCount == 1)
        #expect(pool.ready(c1) == [.submit(r[2], on: c1)])
    }

    @Test("requests handed back by a draining connection go to another one")
    func resendAfterGoAway() {
        var pool = PoolHarness()
        let r = pool.submitFirst(3, streams: 2)
        #expect(pool.send(r[1]) == [.submit(r[1], on: c0)])
        // GOAWAY with last-stream-id 1: r1 (stream 3) was not processed.
        #expect(pool.goAway(c0) == [.scheduleDispatch])
        #expect(pool.returned([r[1]]) == [])
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        #expect(pool.ready(c1) == [.submit(r[1], on: c1)])
    }

    @Test("a request is sent again at most maxResends times, then fails")
    func resendLimit() {
        var pool = PoolHarness()
        let r = pool.submitFirst()
        for _ in 0..<HTTP2PoolMachine.maxResends {
            #expect(pool.returned([r[0]]) == [.scheduleDispatch])
            #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        }
        #expect(HTTP2PoolMachine.maxResends == 10)
        #expect(pool.returned([r[0]]) == [
            .complete(r[0], .failed(.streamFailed("refused by the server 11 times"))), .scheduleDispatch,
        ])
        #expect(pool.machine.inFlightCount == 0)
        #expect(pool.machine.waitingCount == 0)
    }

    @Test("a request handed back during shutdown fails")
    func resendDuringShutdown() {
        var pool = PoolHarness()
        let r = pool.submitFirst()
        #expect(pool.shutdown() == [.drainConnection(c0)])
        #expect(pool.returned([r[0]]) == [
            .complete(r[0], .failed(.streamFailed("refused by the server during shutdown"))), .scheduleDispatch,
        ])
        #expect(pool.closed(c0) == [.cancelDeadlineTimer, .shutdownDone])
    }

    @Test("a request answered or handed back after its answer timeout is ignored")
    func lateAfterTimeout() {
        var pool = PoolHarness()
        let r = PoolHarness.requests(1)
        let start = pool.now
        _ = pool.send(r[0])
        _ = pool.ready(c0)
        pool.now = start + 8 * Self.second
        #expect(pool.deadlineFired() == [.cancelStream(1, on: c0), .complete(r[0], .failed(.answerTimedOut))])
        #expect(pool.finished(r[0]) == [])
        #expect(pool.returned([r[0]]) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        #expect(pool.machine.inFlightCount == 0)
        #expect(pool.machine.waitingCount == 0)
    }

    // MARK: Submit results

    @Test("a session that refuses a sent request: it waits, and a connection opens for it")
    func refusedOnSend() {
        var pool = PoolHarness()
        let r = pool.submitFirst(2)
        pool.answers = [.refuses]
        #expect(pool.send(r[1]) == [.submit(r[1], on: c0), .openConnection(c1)])
        #expect(pool.machine.waitingCount == 1)
        #expect(pool.ready(c1) == [.submit(r[1], on: c0)])
    }

    @Test("a session that refuses a queued request: it goes back first in line and the pass stops")
    func refusedFromQueue() {
        var pool = PoolHarness(PoolHarness.limits(maxConnections: 1))
        let r = PoolHarness.requests(2)
        _ = pool.send(r[0])
        _ = pool.send(r[1])
        pool.answers = [.refuses]
        #expect(pool.ready(c0) == [.submit(r[0], on: c0), .scheduleDispatch])
        #expect(pool.machine.waitingCount == 2)
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0), .submit(r[1], on: c0)])
    }

    @Test("a request HTTP/2 cannot carry fails alone: on the next pass when sent, at once from the queue")
    func unsendable() {
        var pool = PoolHarness()
        let r = PoolHarness.requests(4)
        let failed = RequestFailure.streamFailed("request not sendable over HTTP/2: bad name")
        _ = pool.send(r[0])
        _ = pool.send(r[1])
        pool.answers = [.cannotCarry("bad name")]
        #expect(pool.ready(c0) == [.submit(r[0], on: c0), .complete(r[0], .failed(failed)),
                                   .submit(r[1], on: c0)])
        pool.answers = [.cannotCarry("bad name")]
        #expect(pool.send(r[2]) == [.submit(r[2], on: c0), .completeOnNextPass(r[2], failed)])
        #expect(pool.send(r[3]) == [.submit(r[3], on: c0)])
        #expect(pool.machine.inFlightCount == 2)
    }

    // MARK: Shutdown

    @Test("shutdown sends what fits, fails what waits, drains every connection, and is done when the last closes")
    func shutdown() {
        var pool = PoolHarness()
        let r = pool.submitFirst(4, streams: 1)
        #expect(pool.send(r[1]) == [.openConnection(c1)])
        #expect(pool.send(r[2]) == [])
        // A stream freed and not reported yet: shutdown sends r1 there first.
        pool.connections.table[c0]!.freeStreams = 1
        #expect(pool.shutdown() == [
            .submit(r[1], on: c0), .complete(r[2], .failed(.allConnectionsDown)),
            .drainConnection(c0), .drainConnection(c1),
        ])
        #expect(pool.send(r[3]) == [.completeOnNextPass(r[3], .allConnectionsDown)])
        // The attempt closes at once; c0 waits for its two streams.
        #expect(pool.closed(c1) == [])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted)])
        #expect(pool.finished(r[1]) == [.complete(r[1], PoolHarness.accepted)])
        #expect(pool.closed(c0) == [.cancelDeadlineTimer, .shutdownDone])
        // Asked again once over: done again.
        #expect(pool.shutdown() == [.shutdownDone])
        #expect(pool.dispatchRan() == [])
    }

    @Test("with nothing open, shutdown is done at once")
    func shutdownIdle() {
        var pool = PoolHarness()
        #expect(pool.shutdown() == [.shutdownDone])
    }

    @Test("shutdown cancels a pending retry after a backoff")
    func shutdownCancelsBackoff() {
        var pool = PoolHarness()
        let r = pool.submitFirst(2, streams: 1)
        _ = pool.send(r[1])
        _ = pool.attemptFailed(c1, .connect("refused"))
        #expect(pool.dispatchRan() == [.armBackoffTimer(at: pool.now + 250 * Self.millisecond)])
        #expect(pool.shutdown() == [
            .cancelBackoffTimer, .complete(r[1], .failed(.allConnectionsDown)), .drainConnection(c0),
        ])
    }

    // MARK: Impossible events

    @Test("an event while a submit's result is due stops the process")
    func eventDuringSubmit() async {
        await #expect(processExitsWith: .failure) {
            var machine = HTTP2PoolMachine(limits: PoolHarness.limits())
            var connections = FakeConnections()
            var actions: [PoolAction] = []
            let r = PoolHarness.requests(2)
            machine.send(r[0], now: 0, connections: connections, into: &actions)
            connections.table[c0] = FakeConnection(state: .ready, freeStreams: 1, windowRoom: nil)
            machine.connectionCanTakeMore(c0, now: 0, connections: connections, into: &actions)
            // The submit of r0 is out; no result was reported.
            machine.send(r[1], now: 0, connections: connections, into: &actions)
        }
    }

    @Test("a submit result with no submit out stops the process")
    func resultWithoutSubmit() async {
        await #expect(processExitsWith: .failure) {
            var machine = HTTP2PoolMachine(limits: PoolHarness.limits())
            var actions: [PoolAction] = []
            machine.submitted(streamID: 1, connections: FakeConnections(), into: &actions)
        }
    }
}
