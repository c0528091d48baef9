import HTTP2
import TestSupport
import Testing
@testable import HTTP2Client

typealias PoolAction = HTTP2PoolMachine.Action
typealias PoolConnectionID = HTTP2PoolMachine.ConnectionID

/// A request as a service's subclass makes it: a body size, the policy its
/// service has for an error answer (set by the test), and the answer it
/// completed with.
final class TestRequest: PooledRequest {
    let index: Int
    /// What `policy(afterAnswer:)` answers, in turn (then: complete).
    var policies: [AnswerPolicy] = []
    private(set) var completedWith: PooledAnswer?

    init(_ index: Int, bodyBytes: Int = 100) {
        self.index = index
        super.init(bodyByteCount: bodyBytes)
    }

    override func policy(afterAnswer status: Int) -> AnswerPolicy {
        policies.isEmpty ? .complete : policies.removeFirst()
    }

    override func complete(_ answer: PooledAnswer) {
        completedWith = answer
    }
}

/// One fake connection: what `HTTP2Connection` would answer.
struct FakeConnection {
    var state: HTTP2ConnectionState
    var freeStreams: Int
    /// Room in the server's connection window, bytes; nil: no limit.
    var windowRoom: Int?
}

/// The pool's connections as the machine asks about them, set by the test.
struct FakeConnections: HTTP2PoolConnections {
    var table: [PoolConnectionID: FakeConnection] = [:]

    func state(of connection: PoolConnectionID) -> HTTP2ConnectionState {
        table[connection]?.state ?? .idle
    }

    func canTake(_ connection: PoolConnectionID, bodyBytes: Int) -> Bool {
        guard let fake = table[connection], fake.state == .ready, fake.freeStreams > 0 else { return false }
        return fake.windowRoom.map { $0 >= bodyBytes } ?? true
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
/// session and its result fed back at once, as `HTTP2Pool` does.
struct PoolHarness {
    static let second: UInt64 = 1_000_000_000
    static let millisecond: UInt64 = 1_000_000

    var machine: HTTP2PoolMachine
    var connections = FakeConnections()
    /// Loop nanoseconds.
    var now: UInt64 = 1000 * second
    /// How the session answers the next submits, in order (then: takes).
    var answers: [SessionAnswer] = []
    /// Bearer auth: the stamp of the credential a submit puts on its
    /// request, as `HTTP2Connection.submit` does; nil: certificate auth.
    var authorizationStamp: Int?
    var nextStreamID: Int32 = 1

    static func limits(maxConnections: Int = 2, maxQueued: Int = 100, answerTimeout: UInt64 = 8 * second,
                       backoffBase: UInt64 = 500 * millisecond, backoffCap: UInt64 = 15 * second) -> HTTP2PoolMachine.Limits {
        HTTP2PoolMachine.Limits(maxConnections: maxConnections, maxQueued: maxQueued, answerTimeout: answerTimeout,
                               backoffBase: backoffBase, backoffCap: backoffCap)
    }

    init(_ limits: HTTP2PoolMachine.Limits = limits(), random: UInt64 = 0) {
        machine = HTTP2PoolMachine(limits: limits, random: FixedRandom(values: [random]))
    }

    mutating func run(_ event: (inout HTTP2PoolMachine, FakeConnections, inout [PoolAction]) -> Void) -> [PoolAction] {
        var actions: [PoolAction] = []
        event(&machine, connections, &actions)
        var index = 0
        while index < actions.count {
            switch actions[index] {
            case .submit(let request, let connection):
                let answer = answers.isEmpty ? .takes : answers.removeFirst()
                switch answer {
                case .takes:
                    request.authorizationStamp = authorizationStamp
                    connections.table[connection]!.freeStreams -= 1
                    if let room = connections.table[connection]!.windowRoom {
                        connections.table[connection]!.windowRoom = room - request.bodyByteCount
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
                // `HTTP2Connection.start` resolves first.
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

    mutating func send(_ request: PooledRequest) -> [PoolAction] {
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

    mutating func finished(_ request: PooledRequest, _ answer: PooledAnswer = accepted) -> [PoolAction] {
        // What the connection read of the answer, as `HTTP2Connection` keeps it.
        if case .answered(let status) = answer { request.status = status }
        return run { $0.requestFinished(request, with: answer, connections: $1, into: &$2) }
    }

    mutating func returned(_ requests: [PooledRequest]) -> [PoolAction] {
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
    mutating func submitFirst(_ count: Int = 1, streams: Int = 100) -> [TestRequest] {
        let requests = Self.requests(count)
        #expect(send(requests[0]) == [.armDeadlineTimer(at: now + machine.limits.answerTimeout), .openConnection(c0)])
        #expect(ready(c0, streams: streams) == [.submit(requests[0], on: c0)])
        return requests
    }

    static func requests(_ count: Int, first: Int = 0) -> [TestRequest] {
        (first..<(first + count)).map { TestRequest($0) }
    }

    static let accepted = PooledAnswer.answered(status: 200)
}

let c0 = PoolConnectionID(rawValue: 0)
let c1 = PoolConnectionID(rawValue: 1)
let c2 = PoolConnectionID(rawValue: 2)
let c3 = PoolConnectionID(rawValue: 3)
let c4 = PoolConnectionID(rawValue: 4)
