/// The policy of one pool (ARCHITECTURE.md §5.5) as a value: events in,
/// actions out. `HTTP2Pool` performs the actions (connections, loop timers,
/// completions); this type does no I/O, owns no timer and reads no clock, so
/// every rule is unit-tested with exact times.
///
/// - Time comes with the events, as loop nanoseconds (`EventLoop.now`).
/// - The backoff's jitter comes from `random`, injected (tests pass a fixed
///   sequence).
/// - Connections are named by the `ConnectionID` the machine gives in
///   `openConnection`; what the machine needs of one (its state, whether it
///   takes a request) it asks through `HTTP2PoolConnections`.
/// - A submit is an action whose result is the next event: the pool hands
///   the request to the connection and reports `submitted`,
///   `submitRefused` or `submitUnsendable` at once, before anything else
///   (handing a request to a session calls nothing back). So a batch of
///   submits is a chain of submit and result, each decided with the streams
///   and window the previous one left. Between the two, any other event is
///   impossible.
/// - Completions are actions too; the pool runs them once the event's other
///   actions are carried out, so no caller's code runs while the pool is in
///   the middle of one event (a completion may call `send`).
///
/// Policy:
/// - connect lazily: the first request opens the first connection;
/// - a request goes to the first connection (in the order they were opened)
///   that takes it; requests leave the queue in order, handed-back ones first;
/// - when no connection can take the next request, another is opened (one
///   being established at a time) up to `maxConnections` (draining ones
///   excluded);
/// - beyond that, requests wait in a queue of at most `maxQueued`, then are
///   refused with `.overloaded`;
/// - a connection attempt that fails (before the server's SETTINGS) starts an
///   exponential backoff with jitter; when no other connection is alive, the
///   waiting requests fail with that attempt's error (`.connectFailed`,
///   `.tlsFailed`), and until the backoff ends every new request fails at once
///   with `.allConnectionsDown` (no connection is tried during it); the first
///   request after it tries again. A ready connection reporting capacity
///   resets the backoff;
/// - resent (never twice processed): requests handed back unprocessed
///   (REFUSED_STREAM, above a GOAWAY's last-stream-id, frames never handed to
///   OpenSSL), at most `maxResends` times each. Any other failure of a request
///   on a stream is the connection's answer (`.streamFailed`);
/// - an error answer is the request's to judge (`PooledRequest.policy(afterAnswer:)`,
///   the service's override): it may be mended by sending again, not passed
///   on (each sending again counts against `maxResends`), to any connection
///   or, when the connection is bound to another credential (APNs' 403
///   UnrelatedKeyIdInToken), to another one while that one drains; and the
///   endpoint's authorizer may hear first that the credential the request
///   carried was refused (`credentialRefused`);
/// - one answer deadline per request, measured from `send`: every request has
///   the same timeout, so deadlines are in send order and one timer, set for
///   the front, serves them all;
/// - shutdown: send what fits, fail what waits, drain every connection, and
///   report done once no connection and no request in flight is left.
///
/// The events, by what they concern: a request's way (`+Requests`), the
/// connections (`+Connections`), the dispatch pass (`+Dispatch`), shutdown
/// (`+Shutdown`).
public struct HTTP2PoolMachine {
    /// A connection of this pool, numbered in the order it was opened.
    public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        let rawValue: Int
        public var description: String { "connection \(rawValue)" }
    }

    /// The pool's limits, times in nanoseconds.
    public struct Limits: Equatable, Sendable {
        /// Connections open at once (draining ones excluded).
        public var maxConnections: Int
        /// Requests waiting for a stream; beyond: `.overloaded`.
        public var maxQueued: Int
        /// From `send` to the answer.
        public var answerTimeout: UInt64
        /// Backoff after a failed attempt: base·2^(n−1), capped, half random.
        public var backoffBase: UInt64
        public var backoffCap: UInt64

        public init(maxConnections: Int, maxQueued: Int, answerTimeout: UInt64, backoffBase: UInt64, backoffCap: UInt64) {
            self.maxConnections = maxConnections
            self.maxQueued = maxQueued
            self.answerTimeout = answerTimeout
            self.backoffBase = backoffBase
            self.backoffCap = backoffCap
        }
    }

    /// A request handed back unprocessed this often fails instead.
    static let maxResends = 10

    enum Action: Equatable {
        /// Hand `request` to the connection's session, then report the
        /// result (`submitted`, `submitRefused`, `submitUnsendable`).
        case submit(PooledRequest, on: ConnectionID)
        /// Make and start a connection with this id.
        case openConnection(ConnectionID)
        /// Graceful close: GOAWAY, open streams finish, then close.
        case drainConnection(ConnectionID)
        /// The answer timeout fired for a request on this stream: reset it.
        case cancelStream(Int32, on: ConnectionID)
        case armDeadlineTimer(at: UInt64)
        case cancelDeadlineTimer
        case armBackoffTimer(at: UInt64)
        case cancelBackoffTimer
        /// Report `dispatchPassRan` on the next loop pass.
        case scheduleDispatch
        /// Run the request's completion (after the event's other actions).
        case complete(PooledRequest, PooledAnswer)
        /// Run the request's completion on the next loop pass: never inside
        /// the `send` that was refused.
        case completeOnNextPass(PooledRequest, RequestFailure)
        /// Shutdown is over: tell whoever waits.
        case shutdownDone
        /// The server refused the credential stamped `stamp`: tell the
        /// endpoint's authorizer (`RequestAuthorizer.credentialRefused`)
        /// before the request goes again or completes.
        case credentialRefused(CredentialRefusal, stamp: Int)

        static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.submit(let a, let x), .submit(let b, let y)): a === b && x == y
            case (.openConnection(let x), .openConnection(let y)): x == y
            case (.drainConnection(let x), .drainConnection(let y)): x == y
            case (.cancelStream(let s, let x), .cancelStream(let t, let y)): s == t && x == y
            case (.armDeadlineTimer(let s), .armDeadlineTimer(let t)): s == t
            case (.cancelDeadlineTimer, .cancelDeadlineTimer): true
            case (.armBackoffTimer(let s), .armBackoffTimer(let t)): s == t
            case (.cancelBackoffTimer, .cancelBackoffTimer): true
            case (.scheduleDispatch, .scheduleDispatch): true
            case (.complete(let a, let d), .complete(let b, let e)): a === b && d == e
            case (.completeOnNextPass(let a, let o), .completeOnNextPass(let b, let p)): a === b && o == p
            case (.shutdownDone, .shutdownDone): true
            case (.credentialRefused(let r, let s), .credentialRefused(let q, let t)): r == q && s == t
            default: false
            }
        }
    }

    /// What to do once a dispatch pass has sent what fits.
    enum AfterDispatch: Equatable {
        case nothing
        /// `shutdown` started the pass: shut down after it.
        case shutdown
    }

    /// Where the request being submitted came from, and so what its result leads to.
    enum SubmitOrigin: Equatable {
        /// `send`, nothing waiting: the request goes straight to a connection.
        case send
        /// A dispatch pass, taking requests from the queue in order.
        case dispatch(then: AfterDispatch)
    }

    enum State {
        case running
        /// A submit action is out: its result is the next event. `now` is
        /// the time of the event that decided it.
        case submitting(PooledRequest, on: ConnectionID, origin: SubmitOrigin, now: UInt64)
        /// `shutdown` ran: no request is taken, connections drain.
        /// `doneAwaited`: someone waits for `shutdownDone`.
        case shuttingDown(doneAwaited: Bool)
    }

    let limits: Limits
    var random: any RandomNumberGenerator
    var state: State = .running

    /// Open connections, oldest first (a request goes to the first that takes it).
    var connections: [ConnectionID] = []
    var nextConnectionID = 0

    /// Requests waiting for a stream, in send order.
    var waiting = RequestQueue()
    /// Requests handed back unprocessed: they go before `waiting`.
    var resends = RequestQueue()
    /// Requests in `waiting` and `resends` (finished ones excluded).
    var waitingCount = 0
    /// Requests handed to a session, not yet answered.
    var inFlightCount = 0

    /// Every request from `send` to its completion, for the answer timeout.
    var deadlines = AnswerDeadlines()
    /// Armed for the front of `deadlines` or earlier whenever it is not empty.
    var deadlineTimerArmed = false
    var dispatchScheduled = false
    /// In the dispatch pass under way: the connections before `count`
    /// (positions in `connections`) each refused, earlier in the pass, a
    /// body of at most `bodyBytes`, so they refuse a body as large again
    /// (`HTTP2PoolConnections.canTake`) and are not asked.
    var passRefusals = (count: 0, bodyBytes: 0)

    var consecutiveFailures = 0
    /// Until then (loop nanoseconds), no connection is tried.
    var backoffUntil: UInt64 = 0
    var backoffTimerArmed = false

    init(limits: Limits, random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.limits = limits
        self.random = random
    }

    func impossible(_ event: String) -> Never {
        preconditionFailure("HTTP2PoolMachine: event \(event) in state \(state)")
    }
}
