import Testing
@testable import HTTP2Client

@Suite("HTTP/2 pool machine: the backoff after failed attempts")
struct HTTP2PoolMachineBackoffTests {
    static let millisecond = PoolHarness.millisecond

    @Test("a failed attempt with no connection alive fails the waiting requests with its error", arguments: [
        (ConnectionFailure.connect("connection refused"), RequestFailure.connectFailed("connection refused")),
        (.tls("certificate verify failed"), .tlsFailed("certificate verify failed")),
    ])
    func attemptFailureFailsWaiting(failure: ConnectionFailure, outcome: RequestFailure) {
        var pool = PoolHarness()
        let r = PoolHarness.requests(3)
        _ = pool.send(r[0])
        _ = pool.send(r[1])
        #expect(pool.attemptFailed(c0, failure) == [
            .complete(r[0], .failed(outcome)), .complete(r[1], .failed(outcome)),
            .scheduleDispatch,
        ])
        #expect(pool.machine.waitingCount == 0)
        // During the backoff, with nothing alive, new requests fail at once.
        #expect(pool.send(r[2]) == [.completeOnNextPass(r[2], .allConnectionsDown)])
    }

    /// Attempt after attempt fails with nothing alive; each backoff is seen
    /// exactly: a send one nanosecond before its end fails with
    /// `allConnectionsDown`, a send at its end opens the next attempt.
    @Test("the backoff starts at half of 0.5 s plus up to as much again at random, doubles, and stops at 15 s",
          arguments: [
              // (random value, backoff after failure 1…8 in milliseconds)
              (UInt64(0), [250, 500, 1000, 2000, 4000, 7500, 7500, 7500] as [UInt64]),
              (UInt64(1) << 63, [375, 750, 1500, 3000, 6000, 11_250, 11_250, 11_250]),
          ])
    func backoffDoublesToCap(random: UInt64, backoffs: [UInt64]) {
        var pool = PoolHarness(random: random)
        var index = 0
        for (failure, backoff) in backoffs.enumerated() {
            let request = PoolHarness.requests(1, first: index)[0]
            index += 1
            #expect(pool.send(request).last == .openConnection(PoolConnectionID(rawValue: failure)))
            _ = pool.attemptFailed(PoolConnectionID(rawValue: failure), .connect("refused"))
            #expect(pool.dispatchRan() == [], "nothing waits, nothing is tried")
            let failedAt = pool.now
            pool.now = failedAt + backoff * Self.millisecond - 1
            let early = PoolHarness.requests(1, first: index)[0]
            index += 1
            #expect(pool.send(early) == [.completeOnNextPass(early, .allConnectionsDown)], "failure \(failure + 1)")
            pool.now = failedAt + backoff * Self.millisecond
        }
    }

    @Test("the random half of the backoff never takes it beyond the full delay")
    func jitterUpperBound() {
        var pool = PoolHarness(random: .max)
        let full: [UInt64] = [500, 1000, 2000, 4000, 8000, 15_000, 15_000]
        var index = 0
        for (failure, delay) in full.enumerated() {
            let request = PoolHarness.requests(1, first: index)[0]
            index += 1
            #expect(pool.send(request).last == .openConnection(PoolConnectionID(rawValue: failure)))
            _ = pool.attemptFailed(PoolConnectionID(rawValue: failure), .connect("refused"))
            let failedAt = pool.now
            // Within a nanosecond of the full delay (53 random bits, rounded down).
            pool.now = failedAt + delay * Self.millisecond - 2
            let early = PoolHarness.requests(1, first: index)[0]
            index += 1
            #expect(pool.send(early) == [.completeOnNextPass(early, .allConnectionsDown)])
            pool.now = failedAt + delay * Self.millisecond
        }
    }

    @Test("after many failures the doubling stops at 2^30 times the base (no overflow)")
    func exponentBound() {
        var pool = PoolHarness(PoolHarness.limits(backoffBase: 1, backoffCap: .max))
        for failure in 0..<40 {
            let request = PoolHarness.requests(1, first: failure)[0]
            #expect(pool.send(request).last == .openConnection(PoolConnectionID(rawValue: failure)))
            _ = pool.attemptFailed(PoolConnectionID(rawValue: failure), .connect("refused"))
            // Random 0: half of base·2^min(n−1, 30).
            let backoff = (UInt64(1) << UInt64(min(failure, 30))) / 2
            guard backoff > 0 else { continue }  // the first: half a nanosecond, none
            let probe = PoolHarness.requests(1, first: 100 + failure)[0]
            pool.now += backoff - 1
            #expect(pool.send(probe) == [.completeOnNextPass(probe, .allConnectionsDown)], "failure \(failure + 1)")
            pool.now += 1
        }
    }

    @Test("a connection reaching ready resets the backoff: the next failure backs off as the first did")
    func readyResetsBackoff() {
        var pool = PoolHarness()
        let r = PoolHarness.requests(8)
        let refused = ConnectionFailure.connect("refused")
        #expect(pool.send(r[0]).last == .openConnection(c0))
        #expect(pool.attemptFailed(c0, refused) == [.complete(r[0], .failed(.connectFailed("refused"))),
                                                    .scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        pool.now += 250 * Self.millisecond
        #expect(pool.send(r[1]) == [.openConnection(c1)])
        _ = pool.attemptFailed(c1, refused)
        _ = pool.dispatchRan()
        // The second failure doubles: 0.5 s.
        pool.now += 500 * Self.millisecond - 1
        #expect(pool.send(r[2]) == [.completeOnNextPass(r[2], .allConnectionsDown)])
        pool.now += 1
        #expect(pool.send(r[3]) == [.openConnection(c2)])
        #expect(pool.ready(c2) == [.submit(r[3], on: c2)])
        #expect(pool.finished(r[3]) == [.complete(r[3], PoolHarness.accepted)])
        #expect(pool.closed(c2) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        // No backoff left: a send opens at once; its failure backs off 0.25 s again.
        #expect(pool.send(r[4]) == [.openConnection(c3)])
        _ = pool.attemptFailed(c3, refused)
        pool.now += 250 * Self.millisecond - 1
        #expect(pool.send(r[5]) == [.completeOnNextPass(r[5], .allConnectionsDown)])
        pool.now += 1
        #expect(pool.send(r[6]) == [.openConnection(c4)])
    }

    @Test("a failed attempt while another connection is alive: requests keep waiting, a timer retries after the backoff")
    func backoffWithLiveConnection() {
        var pool = PoolHarness()
        let r = pool.submitFirst(3, streams: 1)
        #expect(pool.send(r[1]) == [.openConnection(c1)])
        #expect(pool.attemptFailed(c1, .tls("handshake failed")) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [.armBackoffTimer(at: pool.now + 250 * Self.millisecond)])
        // c0 is alive: a new request waits rather than failing.
        #expect(pool.send(r[2]) == [])
        #expect(pool.machine.waitingCount == 2)
        pool.now += 250 * Self.millisecond
        #expect(pool.backoffFired() == [.openConnection(c2)])
        #expect(pool.ready(c2) == [.submit(r[1], on: c2), .submit(r[2], on: c2)])
    }
}
