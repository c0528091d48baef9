import RelayCore
import Testing
@testable import APNs

typealias PoolAction = APNsPoolMachine.Action
typealias PoolConnectionID = APNsPoolMachine.ConnectionID

/// One fake connection: what `APNsConnection` would answer.
struct FakeConnection {
    var state: APNsConnectionState
    var freeStreams: Int
    /// Room in the server's connection window, bytes; nil: no limit.
    var windowRoom: Int?
}

/// The pool's connections as the machine asks about them, set by the test.
struct FakeConnections: APNsPoolConnections {
    var table: [PoolConnectionID: FakeConnection] = [:]

    func state(of connection: PoolConnectionID) -> APNsConnectionState {
        table[connection]?.state ?? .idle
    }

    func canTake(_ connection: PoolConnectionID, bodyBytes: Int) -> Bool {
        guard let fake = table[connection], fake.state == .ready, fake.freeStreams > 0 else { return false }
        return fake.windowRoom.map { $0 >= bodyBytes } ?? true
    }
}

/// Returns the same values in turn: the backoff's jitter, exactly.
struct FixedRandom: RandomNumberGenerator {
    var values: [UInt64]
    var index = 0

    mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[index % values.count]
    }
}

/// How the fake session answers a submit.
enum SessionAnswer {
    case takes
    /// GOAWAY raced in.
    case refuses
    /// HTTP/2 cannot carry it.
    case cannotCarry(String)
}

/// A machine with fake connections and a clock the test moves: each event
/// returns the actions it led to, with every submit answered by the fake
/// session and its result fed back at once, as `APNsPool` does.
struct PoolHarness {
    static let second: UInt64 = 1_000_000_000
    static let millisecond: UInt64 = 1_000_000

    var machine: APNsPoolMachine
    var connections = FakeConnections()
    /// Loop nanoseconds.
    var now: UInt64 = 1000 * second
    /// How the session answers the next submits, in order (then: takes).
    var answers: [SessionAnswer] = []
    /// Token auth: the `iat` of the provider token a submit stamps on its
    /// request, as `APNsConnection.submit` does; nil: certificate auth.
    var tokenIssuedAt: Int?
    var nextStreamID: Int32 = 1

    static func limits(maxConnections: Int = 2, maxQueued: Int = 100, answerTimeout: UInt64 = 8 * second,
                       backoffBase: UInt64 = 500 * millisecond, backoffCap: UInt64 = 15 * second) -> APNsPoolMachine.Limits {
        APNsPoolMachine.Limits(maxConnections: maxConnections, maxQueued: maxQueued, answerTimeout: answerTimeout,
                               backoffBase: backoffBase, backoffCap: backoffCap)
    }

    init(_ limits: APNsPoolMachine.Limits = limits(), random: UInt64 = 0) {
        machine = APNsPoolMachine(limits: limits, random: FixedRandom(values: [random]))
    }

    mutating func run(_ event: (inout APNsPoolMachine, FakeConnections, inout [PoolAction]) -> Void) -> [PoolAction] {
        var actions: [PoolAction] = []
        event(&machine, connections, &actions)
        var index = 0
        while index < actions.count {
            switch actions[index] {
            case .submit(let request, let connection):
                let answer = answers.isEmpty ? .takes : answers.removeFirst()
                switch answer {
                case .takes:
                    request.tokenIssuedAt = tokenIssuedAt
                    connections.table[connection]!.freeStreams -= 1
                    if let room = connections.table[connection]!.windowRoom {
                        connections.table[connection]!.windowRoom = room - request.notification.payload.count
                    }
                    let streamID = nextStreamID
                    nextStreamID += 2
                    machine.submitted(streamID: streamID, connections: connections, into: &actions)
                case .refuses:
                    machine.submitRefused(connections: connections, into: &actions)
                case .cannotCarry(let reason):
                    machine.submitUnsendable(reason, connections: connections, into: &actions)
                }
            case .openConnection(let connection):
                // `APNsConnection.start` resolves first.
                connections.table[connection] = FakeConnection(state: .resolving, freeStreams: 0, windowRoom: 65_535)
            case .drainConnection(let connection):
                // A ready connection drains; one not ready yet closes (the test reports it).
                if connections.table[connection]?.state == .ready { connections.table[connection]!.state = .draining }
            default:
                break
            }
            index += 1
        }
        return actions
    }

    mutating func send(_ request: PooledNotification) -> [PoolAction] {
        let now = now
        return run { $0.send(request, now: now, connections: $1, into: &$2) }
    }

    /// The server's SETTINGS arrived: the connection is ready with `streams`.
    mutating func ready(_ connection: PoolConnectionID, streams: Int = 100, window: Int? = nil) -> [PoolAction] {
        connections.table[connection] = FakeConnection(state: .ready, freeStreams: streams, windowRoom: window)
        return canTakeMore(connection)
    }

    mutating func canTakeMore(_ connection: PoolConnectionID) -> [PoolAction] {
        let now = now
        return run { $0.connectionCanTakeMore(connection, now: now, connections: $1, into: &$2) }
    }

    mutating func finished(_ request: PooledNotification, _ delivery: APNsDelivery? = nil) -> [PoolAction] {
        let delivery = delivery ?? Self.accepted(request)
        // What the connection read of the answer, as `APNsConnection` keeps it.
        if case .apns(let status, _, _) = delivery.outcome { request.status = status }
        return run { $0.requestFinished(request, with: delivery, connections: $1, into: &$2) }
    }

    mutating func returned(_ requests: [PooledNotification]) -> [PoolAction] {
        run { $0.requestsReturnedUnprocessed(requests, into: &$2) }
    }

    mutating func goAway(_ connection: PoolConnectionID) -> [PoolAction] {
        connections.table[connection]!.state = .draining
        return run { $0.connectionDraining(connection, into: &$2) }
    }

    mutating func attemptFailed(_ connection: PoolConnectionID, _ failure: ConnectionFailure) -> [PoolAction] {
        connections.table[connection] = nil
        let now = now
        return run { $0.connectionAttemptFailed(connection, failure, now: now, connections: $1, into: &$2) }
    }

    mutating func closed(_ connection: PoolConnectionID) -> [PoolAction] {
        connections.table[connection] = nil
        return run { $0.connectionClosed(connection, into: &$2) }
    }

    mutating func deadlineFired() -> [PoolAction] {
        let now = now
        return run { $0.deadlineTimerFired(now: now, into: &$2) }
    }

    mutating func backoffFired() -> [PoolAction] {
        let now = now
        return run { $0.backoffTimerFired(now: now, connections: $1, into: &$2) }
    }

    mutating func dispatchRan() -> [PoolAction] {
        let now = now
        return run { $0.dispatchPassRan(now: now, connections: $1, into: &$2) }
    }

    mutating func shutdown() -> [PoolAction] {
        let now = now
        return run { $0.shutdown(now: now, connections: $1, into: &$2) }
    }

    /// `count` requests, the first sent (its deadline armed, c0 opened) and
    /// submitted on c0 once it is ready with `streams`: where most tests start.
    mutating func submitFirst(_ count: Int = 1, streams: Int = 100) -> [PooledNotification] {
        let requests = Self.requests(count)
        #expect(send(requests[0]) == [.armDeadlineTimer(at: now + machine.limits.answerTimeout), .openConnection(c0)])
        #expect(ready(c0, streams: streams) == [.submit(requests[0], on: c0)])
        return requests
    }

    static func requests(_ count: Int, first: Int = 0) -> [PooledNotification] {
        (first..<(first + count)).map { index in
            // makeNotification fails only for input the fixtures never give.
            PooledNotification(notification: try! Fixtures.notification(token: Fixtures.deviceToken(index))) { _ in }
        }
    }

    static func accepted(_ request: PooledNotification) -> APNsDelivery {
        APNsDelivery(outcome: .apns(status: 200, reason: nil, apnsID: request.notification.apnsID))
    }
}

let c0 = PoolConnectionID(rawValue: 0)
let c1 = PoolConnectionID(rawValue: 1)
let c2 = PoolConnectionID(rawValue: 2)
let c3 = PoolConnectionID(rawValue: 3)
let c4 = PoolConnectionID(rawValue: 4)

@Suite("APNs pool machine")
struct APNsPoolMachineTests {
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
              (APNsConnectionState.ready, 1, nil as Int?, 1, 0 as Int?),
              (.ready, 0, nil, 1, 1),
              (.ready, 1, 10, 1, 1),
              (.ready, 1, 10_000, 1, 0),
              (.draining, 5, nil, 1, 1),
              (.ready, 0, nil, 0, nil),
          ])
    func whichConnection(state: APNsConnectionState, streams: Int, window: Int?, otherStreams: Int, takenBy: Int?) {
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

    // MARK: Backoff

    @Test("a failed attempt with no connection alive fails the waiting requests with its error", arguments: [
        (ConnectionFailure.connect("connection refused"), DeliveryOutcome.connectFailed("connection refused")),
        (.tls("certificate verify failed"), .tlsFailed("certificate verify failed")),
    ])
    func attemptFailureFailsWaiting(failure: ConnectionFailure, outcome: DeliveryOutcome) {
        var pool = PoolHarness()
        let r = PoolHarness.requests(3)
        _ = pool.send(r[0])
        _ = pool.send(r[1])
        #expect(pool.attemptFailed(c0, failure) == [
            .complete(r[0], APNsDelivery(outcome: outcome)), .complete(r[1], APNsDelivery(outcome: outcome)),
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
        #expect(pool.attemptFailed(c0, refused) == [.complete(r[0], APNsDelivery(outcome: .connectFailed("refused"))),
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
        #expect(pool.finished(r[3]) == [.complete(r[3], PoolHarness.accepted(r[3]))])
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
        for _ in 0..<APNsPoolMachine.maxResends {
            #expect(pool.returned([r[0]]) == [.scheduleDispatch])
            #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        }
        #expect(APNsPoolMachine.maxResends == 10)
        #expect(pool.returned([r[0]]) == [
            .complete(r[0], APNsDelivery(outcome: .streamFailed("refused by APNs 11 times"))), .scheduleDispatch,
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
            .complete(r[0], APNsDelivery(outcome: .streamFailed("refused by APNs during shutdown"))), .scheduleDispatch,
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
        #expect(pool.deadlineFired() == [.cancelStream(1, on: c0), .complete(r[0], APNsDelivery(outcome: .answerTimedOut))])
        #expect(pool.finished(r[0]) == [])
        #expect(pool.returned([r[0]]) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        #expect(pool.machine.inFlightCount == 0)
        #expect(pool.machine.waitingCount == 0)
    }

    // MARK: Answers about the provider token

    static func answered(_ request: PooledNotification, _ status: Int, _ reason: APNsReason) -> APNsDelivery {
        APNsDelivery(outcome: .apns(status: status, reason: reason, apnsID: request.notification.apnsID))
    }

    static func unrelatedKey(_ request: PooledNotification) -> APNsDelivery {
        answered(request, 403, .unrelatedKeyIdInToken)
    }

    static func tooManyUpdates(_ request: PooledNotification) -> APNsDelivery {
        answered(request, 429, .tooManyProviderTokenUpdates)
    }

    @Test("403 UnrelatedKeyIdInToken: the connection drains and the request goes again on another, opened for it")
    func unrelatedKeyMovesToAnotherConnection() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst(3)
        #expect(pool.send(r[1]) == [.submit(r[1], on: c0)])
        #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [.drainConnection(c0), .scheduleDispatch])
        #expect(r[0].phase == .queued)
        #expect(r[0].resendCount == 1)
        #expect(!r[0].isCompleted)
        #expect(pool.machine.waitingCount == 1)
        #expect(pool.machine.inFlightCount == 1)
        // The draining connection takes nothing: another opens.
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        #expect(pool.send(r[2]) == [])
        // Another request answered so on the same connection: already draining.
        #expect(pool.finished(r[1], Self.unrelatedKey(r[1])) == [.scheduleDispatch])
        #expect(pool.ready(c1) == [.submit(r[0], on: c1), .submit(r[1], on: c1), .submit(r[2], on: c1)])
        #expect(pool.closed(c0) == [.scheduleDispatch])
        #expect(pool.dispatchRan() == [])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted(r[0]))])
    }

    @Test("UnrelatedKeyIdInToken on every connection: the request goes again at most maxResends times, then that answer is its own")
    func unrelatedKeyResendLimit() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst()
        for attempt in 0..<APNsPoolMachine.maxResends {
            let connection = PoolConnectionID(rawValue: attempt)
            let next = PoolConnectionID(rawValue: attempt + 1)
            #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [.drainConnection(connection), .scheduleDispatch])
            #expect(pool.closed(connection) == [])
            #expect(pool.dispatchRan() == [.openConnection(next)])
            #expect(pool.ready(next) == [.submit(r[0], on: next)], "attempt \(attempt + 2)")
        }
        let last = PoolConnectionID(rawValue: APNsPoolMachine.maxResends)
        #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [
            .drainConnection(last), .complete(r[0], Self.unrelatedKey(r[0])),
        ])
        #expect(pool.machine.inFlightCount == 0)
        #expect(pool.machine.waitingCount == 0)
    }

    @Test("429 TooManyProviderTokenUpdates: the token provider hears of it first, the request goes again once, a second refusal is the answer")
    func tooManyTokenUpdatesResendsOnce() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_003_000
        let r = pool.submitFirst()
        // What the connection read of the first answer.
        r[0].status = 429
        r[0].body = Array(#"{"reason":"TooManyProviderTokenUpdates"}"#.utf8)
        r[0].responseAPNsID = r[0].notification.apnsID
        #expect(pool.finished(r[0], Self.tooManyUpdates(r[0])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_003_000), .scheduleDispatch,
        ])
        // Forgotten, so the next answer is read on its own.
        #expect(r[0].status == nil && r[0].body.isEmpty && r[0].responseAPNsID == nil)
        #expect(r[0].resendCount == 1)
        // The provider went back to the token before; the same connection
        // takes the request again (it is bound to nothing wrong).
        pool.tokenIssuedAt = 1_700_000_000
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        #expect(r[0].tokenIssuedAt == 1_700_000_000)
        #expect(pool.finished(r[0], Self.tooManyUpdates(r[0])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_000_000), .complete(r[0], Self.tooManyUpdates(r[0])),
        ])
    }

    @Test("429 TooManyProviderTokenUpdates, the second attempt accepted: the sender sees the acceptance")
    func tooManyTokenUpdatesThenAccepted() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_003_000
        let r = pool.submitFirst()
        _ = pool.finished(r[0], Self.tooManyUpdates(r[0]))
        pool.connections.table[c0]!.freeStreams += 1
        #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted(r[0]))])
    }

    @Test("the resend after TooManyProviderTokenUpdates counts against maxResends")
    func tooManyTokenUpdatesWithinResendLimit() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst()
        for _ in 0..<APNsPoolMachine.maxResends {
            _ = pool.returned([r[0]])
            #expect(pool.dispatchRan() == [.submit(r[0], on: c0)])
        }
        #expect(pool.finished(r[0], Self.tooManyUpdates(r[0])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_000_000), .complete(r[0], Self.tooManyUpdates(r[0])),
        ])
    }

    @Test("without a provider token (certificate auth) these answers are the request's own", arguments: [
        (403, APNsReason.unrelatedKeyIdInToken), (429, .tooManyProviderTokenUpdates),
    ])
    func tokenAnswersWithoutToken(status: Int, reason: APNsReason) {
        var pool = PoolHarness()
        let r = pool.submitFirst()
        let delivery = Self.answered(r[0], status, reason)
        #expect(pool.finished(r[0], delivery) == [.complete(r[0], delivery)])
    }

    @Test("other answers about the token are not sent again", arguments: [
        (403, APNsReason.expiredProviderToken), (403, .invalidProviderToken), (403, .badEnvironmentKeyInToken),
        (403, .badEnvironmentKeyIdInToken), (429, .tooManyRequests), (403, .unknown("SomethingNew")),
    ])
    func otherTokenAnswers(status: Int, reason: APNsReason) {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst()
        let delivery = Self.answered(r[0], status, reason)
        #expect(pool.finished(r[0], delivery) == [.complete(r[0], delivery)])
    }

    @Test("during shutdown these answers are the request's own; the provider still hears of a refused update")
    func tokenAnswersDuringShutdown() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let r = pool.submitFirst(2)
        _ = pool.send(r[1])
        #expect(pool.shutdown() == [.drainConnection(c0)])
        #expect(pool.finished(r[0], Self.unrelatedKey(r[0])) == [.complete(r[0], Self.unrelatedKey(r[0]))])
        #expect(pool.finished(r[1], Self.tooManyUpdates(r[1])) == [
            .tokenUpdatesRefused(issuedAt: 1_700_000_000), .complete(r[1], Self.tooManyUpdates(r[1])),
        ])
        #expect(pool.closed(c0) == [.cancelDeadlineTimer, .shutdownDone])
    }

    @Test("a request sent again keeps its answer deadline from the first send")
    func tokenResendKeepsDeadline() {
        var pool = PoolHarness()
        pool.tokenIssuedAt = 1_700_000_000
        let start = pool.now
        let r = pool.submitFirst(1, streams: 1)
        pool.now += Self.second
        _ = pool.finished(r[0], Self.tooManyUpdates(r[0]))
        // No free stream on c0 (not reported yet): another opens, and is slow.
        #expect(pool.dispatchRan() == [.openConnection(c1)])
        pool.now = start + 8 * Self.second
        #expect(pool.deadlineFired() == [.complete(r[0], APNsDelivery(outcome: .answerTimedOut))])
        #expect(pool.ready(c1) == [])
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
        let failed = DeliveryOutcome.streamFailed("request not sendable over HTTP/2: bad name")
        _ = pool.send(r[0])
        _ = pool.send(r[1])
        pool.answers = [.cannotCarry("bad name")]
        #expect(pool.ready(c0) == [.submit(r[0], on: c0), .complete(r[0], APNsDelivery(outcome: failed)),
                                   .submit(r[1], on: c0)])
        pool.answers = [.cannotCarry("bad name")]
        #expect(pool.send(r[2]) == [.submit(r[2], on: c0), .completeOnNextPass(r[2], failed)])
        #expect(pool.send(r[3]) == [.submit(r[3], on: c0)])
        #expect(pool.machine.inFlightCount == 2)
    }

    // MARK: Answer deadlines

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
        #expect(pool.finished(answered1) == [.complete(answered1, PoolHarness.accepted(answered1))])
        #expect(pool.finished(answered2) == [.complete(answered2, PoolHarness.accepted(answered2))])
        // A timer that fires early changes nothing but is set again.
        pool.now = start + timeout - 1
        #expect(pool.deadlineFired() == [.armDeadlineTimer(at: start + timeout)])
        pool.now = start + timeout
        #expect(pool.deadlineFired() == [
            .cancelStream(1, on: c0), .complete(silentFirst, APNsDelivery(outcome: .answerTimedOut)),
            .armDeadlineTimer(at: start + 150 * Self.millisecond + timeout),
        ])
        pool.now = start + 150 * Self.millisecond + timeout
        #expect(pool.deadlineFired() == [
            .cancelStream(5, on: c0), .complete(silentLater, APNsDelivery(outcome: .answerTimedOut)),
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
            .complete(r[0], APNsDelivery(outcome: .answerTimedOut)),
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
        let lost = APNsDelivery(outcome: .streamFailed("connection lost: server closed the connection"))
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
            .submit(r[1], on: c0), .complete(r[2], APNsDelivery(outcome: .allConnectionsDown)),
            .drainConnection(c0), .drainConnection(c1),
        ])
        #expect(pool.send(r[3]) == [.completeOnNextPass(r[3], .allConnectionsDown)])
        // The attempt closes at once; c0 waits for its two streams.
        #expect(pool.closed(c1) == [])
        #expect(pool.finished(r[0]) == [.complete(r[0], PoolHarness.accepted(r[0]))])
        #expect(pool.finished(r[1]) == [.complete(r[1], PoolHarness.accepted(r[1]))])
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
            .cancelBackoffTimer, .complete(r[1], APNsDelivery(outcome: .allConnectionsDown)), .drainConnection(c0),
        ])
    }

    // MARK: Impossible events

    @Test("an event while a submit's result is due stops the process")
    func eventDuringSubmit() async {
        await #expect(processExitsWith: .failure) {
            var machine = APNsPoolMachine(limits: PoolHarness.limits())
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
            var machine = APNsPoolMachine(limits: PoolHarness.limits())
            var actions: [PoolAction] = []
            machine.submitted(streamID: 1, connections: FakeConnections(), into: &actions)
        }
    }
}
