import Testing
@testable import HTTP2Client

/// The fake connections of `PoolHarness`, recording which connection the
/// machine asks `canTake` about, in order.
private struct AskedConnections: HTTP2PoolConnections {
    final class Questions {
        var canTake: [PoolConnectionID] = []
    }

    var fake: FakeConnections
    let questions = Questions()

    func state(of connection: PoolConnectionID) -> HTTP2ConnectionState {
        fake.state(of: connection)
    }

    func canTake(_ connection: PoolConnectionID, bodyBytes: Int) -> Bool {
        questions.canTake.append(connection)
        return fake.canTake(connection, bodyBytes: bodyBytes)
    }
}

/// A dispatch pass does not ask again a connection that refused a body as
/// large earlier in the pass (`HTTP2PoolMachine.connectionInPass`): nothing
/// but the submits changes the connections during a pass, and a submit only
/// takes from the connection it went to. Where each request goes is the
/// same as when every connection is asked for every request.
@Suite("HTTP/2 pool machine: dispatch pass")
struct APNsPoolDispatchPassTests {
    /// A request with `bodyBytes` of payload.
    static func request(_ index: Int, bodyBytes: Int) -> TestRequest {
        TestRequest(index, bodyBytes: bodyBytes)
    }

    /// `connection` reports room, with `view` answering; every submit is
    /// taken, as `PoolHarness.run` takes it (a stream and the body's window
    /// room used). Returns the actions and the connections asked, in order.
    static func canTakeMore(_ connection: PoolConnectionID, _ pool: inout PoolHarness)
        -> (actions: [PoolAction], asked: [PoolConnectionID]) {
        var view = AskedConnections(fake: pool.connections)
        var actions: [PoolAction] = []
        pool.machine.connectionCanTakeMore(connection, now: pool.now, connections: view, into: &actions)
        var index = 0
        var streamID: Int32 = 101
        while index < actions.count {
            if case .submit(let request, let target) = actions[index] {
                view.fake.table[target]!.freeStreams -= 1
                if let room = view.fake.table[target]!.windowRoom {
                    view.fake.table[target]!.windowRoom = room - request.bodyByteCount
                }
                pool.machine.submitted(streamID: streamID, connections: view, into: &actions)
                streamID += 2
            }
            index += 1
        }
        pool.connections = view.fake
        return (actions, view.questions.canTake)
    }

    /// c0 and c1 ready and full, c2 being established while `waiting` more
    /// requests queue (body sizes as given; every earlier request 100 bytes).
    static func twoFullConnectionsAndAThird(waiting bodyBytes: [Int]) -> (PoolHarness, [PooledRequest]) {
        var pool = PoolHarness(PoolHarness.limits(maxConnections: 3))
        let first = (0..<3).map { request($0, bodyBytes: 100) }
        _ = pool.send(first[0])
        #expect(pool.ready(c0, streams: 1) == [.submit(first[0], on: c0)])
        #expect(pool.send(first[1]) == [.openConnection(c1)])
        #expect(pool.ready(c1, streams: 1) == [.submit(first[1], on: c1)])
        #expect(pool.send(first[2]) == [.openConnection(c2)])
        let waiting = bodyBytes.enumerated().map { request(3 + $0.offset, bodyBytes: $0.element) }
        for request in waiting { #expect(pool.send(request) == []) }
        return (pool, [first[2]] + waiting)
    }

    @Test("a pass asks each full connection once, then only the one taking the requests")
    func fullConnectionsAskedOnce() {
        var (pool, queued) = Self.twoFullConnectionsAndAThird(waiting: [100, 100, 100, 100])
        pool.connections.table[c2] = FakeConnection(state: .ready, freeStreams: 100, windowRoom: nil)
        let (actions, asked) = Self.canTakeMore(c2, &pool)
        #expect(actions == queued.map { .submit($0, on: c2) })
        #expect(asked == [c0, c1, c2, c2, c2, c2, c2])
        #expect(pool.machine.waitingCount == 0)
    }

    @Test("a smaller body than one refused is offered to every connection again, in order")
    func smallerBodyAskedAgain() {
        // c0 has streams and 150 bytes of window; c1 is full; c2 has room.
        var (pool, queued) = Self.twoFullConnectionsAndAThird(waiting: [200, 40, 200, 200])
        pool.connections.table[c0] = FakeConnection(state: .ready, freeStreams: 5, windowRoom: 150)
        pool.connections.table[c2] = FakeConnection(state: .ready, freeStreams: 100, windowRoom: nil)
        let (actions, asked) = Self.canTakeMore(c2, &pool)
        // queued: 100 bytes (the third connection's first request), 200, 40, 200, 200.
        #expect(actions == [.submit(queued[0], on: c0), .submit(queued[1], on: c2), .submit(queued[2], on: c0),
                            .submit(queued[3], on: c2), .submit(queued[4], on: c2)])
        #expect(asked == [
            c0,          // 100 bytes: c0 takes it (50 bytes of window left)
            c0, c1, c2,  // 200 bytes: c0 and c1 refuse
            c0,          // 40 bytes, smaller than the 200 refused: from the first again, and c0 takes it
            c0, c1, c2,  // 200 bytes, larger than the 40 c0 took: from the first again
            c2,          // 200 bytes: c0 and c1 refused as much in this pass
        ])
    }

    @Test("a new pass asks every connection again")
    func newPassAsksAgain() {
        var (pool, queued) = Self.twoFullConnectionsAndAThird(waiting: [100])
        pool.connections.table[c2] = FakeConnection(state: .ready, freeStreams: 1, windowRoom: nil)
        let first = Self.canTakeMore(c2, &pool)
        #expect(first.actions == [.submit(queued[0], on: c2)])
        // c2's one stream goes to the first; the second fits nowhere.
        #expect(first.asked == [c0, c1, c2, c2])
        // A stream of c0 closed: the next pass starts from it.
        pool.connections.table[c0]!.freeStreams = 1
        let second = Self.canTakeMore(c0, &pool)
        #expect(second.actions == [.submit(queued[1], on: c0)])
        #expect(second.asked == [c0])
    }
}
