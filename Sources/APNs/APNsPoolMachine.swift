import EventLoop

/// What the pool machine asks of its connections, at the moment it decides.
///
/// Asked, not passed in with each event: whether a connection takes a
/// request depends on nghttp2's stream count and the server's flow-control
/// window, which every submit, frame read and WINDOW_UPDATE changes; a copy
/// handed in with the event would be stale after the first submit of a batch.
/// `APNsPool` answers from its `APNsConnection`s; tests answer from a table.
protocol APNsPoolConnections {
    /// The connection's state now. A connection the machine has just asked
    /// to open and the pool has not made yet is `idle`, as a new one is.
    func state(of connection: APNsPoolMachine.ConnectionID) -> APNsConnectionState
    /// Whether a request with `bodyBytes` of body should go there now: a
    /// free stream and room in the server's connection flow-control window
    /// (`APNsConnection.canTake`).
    ///
    /// A connection that refused a body refuses one as large until the
    /// machine is told of a change by an event other than a submit's result:
    /// a submit changes only the connection it went to, which then has fewer
    /// streams and less window, never more. A dispatch pass relies on it
    /// (`connectionInPass(taking:_:)`).
    func canTake(_ connection: APNsPoolMachine.ConnectionID, bodyBytes: Int) -> Bool
    /// The same two questions about the connection at `position` in the
    /// machine's list of open connections (oldest first). The pool keeps its
    /// connections in that order too, so it finds the connection there
    /// without a search: the machine asks about every connection for every
    /// request it places (callgrind: the searches cost about 200
    /// instructions per notification at 4 connections). The answers are the
    /// id-based ones, which a view without positions gives by default.
    func state(of connection: APNsPoolMachine.ConnectionID, at position: Int) -> APNsConnectionState
    func canTake(_ connection: APNsPoolMachine.ConnectionID, at position: Int, bodyBytes: Int) -> Bool
}

extension APNsPoolConnections {
    func state(of connection: APNsPoolMachine.ConnectionID, at position: Int) -> APNsConnectionState {
        state(of: connection)
    }

    func canTake(_ connection: APNsPoolMachine.ConnectionID, at position: Int, bodyBytes: Int) -> Bool {
        canTake(connection, bodyBytes: bodyBytes)
    }
}

/// The policy of one pool (ARCHITECTURE.md §5.5) as a value: events in,
/// actions out. `APNsPool` performs the actions (connections, loop timers,
/// completions); this type does no I/O, owns no timer and reads no clock, so
/// every rule is unit-tested with exact times.
///
/// - Time comes with the events, as loop nanoseconds (`EventLoop.now`).
/// - The backoff's jitter comes from `random`, injected (tests pass a fixed
///   sequence).
/// - Connections are named by the `ConnectionID` the machine gives in
///   `openConnection`; what the machine needs of one (its state, whether it
///   takes a request) it asks through `APNsPoolConnections`.
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
/// - two answers about the provider token are mended by sending again, not
///   passed on (for a request that carried a token; each sending again counts
///   against `maxResends`):
///   403 UnrelatedKeyIdInToken: APNs binds a connection to the key of its
///   first token ("To use this token, open a new connection"), so that
///   connection drains (no new request goes there) and the request goes to
///   another, one opening if needed;
///   429 TooManyProviderTokenUpdates: the token was an update too many; the
///   token provider is told (`tokenUpdatesRefused`: it goes back to the
///   token before, or holds renewals) and the request goes again once, with
///   the token then current. A second refusal is the answer (503);
/// - one answer deadline per request, measured from `send`: every request has
///   the same timeout, so deadlines are in send order and one timer, set for
///   the front, serves them all;
/// - shutdown: send what fits, fail what waits, drain every connection, and
///   report done once no connection and no request in flight is left.
struct APNsPoolMachine {
    /// A connection of this pool, numbered in the order it was opened.
    struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        let rawValue: Int
        var description: String { "connection \(rawValue)" }
    }

    /// The pool's limits, times in nanoseconds.
    struct Limits: Equatable {
        /// Connections open at once (draining ones excluded).
        var maxConnections: Int
        /// Requests waiting for a stream; beyond: `.overloaded`.
        var maxQueued: Int
        /// From `send` to the answer.
        var answerTimeout: UInt64
        /// Backoff after a failed attempt: base·2^(n−1), capped, half random.
        var backoffBase: UInt64
        var backoffCap: UInt64

        init(maxConnections: Int, maxQueued: Int, answerTimeout: UInt64, backoffBase: UInt64, backoffCap: UInt64) {
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
        case submit(PooledNotification, on: ConnectionID)
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
        case complete(PooledNotification, APNsDelivery)
        /// Run the request's completion on the next loop pass: never inside
        /// the `send` that was refused.
        case completeOnNextPass(PooledNotification, DeliveryOutcome)
        /// Shutdown is over: tell whoever waits.
        case shutdownDone
        /// APNs refused the provider token issued at `issuedAt` as an update
        /// too many: tell the token provider (`APNsTokenProvider.tokenUpdatesRefused`)
        /// before the request goes again.
        case tokenUpdatesRefused(issuedAt: Int)

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
            case (.tokenUpdatesRefused(let s), .tokenUpdatesRefused(let t)): s == t
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
        case submitting(PooledNotification, on: ConnectionID, origin: SubmitOrigin, now: UInt64)
        /// `shutdown` ran: no request is taken, connections drain.
        /// `doneAwaited`: someone waits for `shutdownDone`.
        case shuttingDown(doneAwaited: Bool)
    }

    let limits: Limits
    private var random: any RandomNumberGenerator
    private var state: State = .running

    /// Open connections, oldest first (a request goes to the first that takes it).
    private var connections: [ConnectionID] = []
    private var nextConnectionID = 0

    /// Requests waiting for a stream, in send order.
    private var waiting = RequestQueue()
    /// Requests handed back unprocessed: they go before `waiting`.
    private var resends = RequestQueue()
    /// Requests in `waiting` and `resends` (finished ones excluded).
    private(set) var waitingCount = 0
    /// Requests handed to a session, not yet answered.
    private(set) var inFlightCount = 0

    /// Every request from `send` to its completion, for the answer timeout.
    private var deadlines = AnswerDeadlines()
    /// Armed for the front of `deadlines` or earlier whenever it is not empty.
    private var deadlineTimerArmed = false
    private var dispatchScheduled = false
    /// In the dispatch pass under way: the connections before `count`
    /// (positions in `connections`) each refused, earlier in the pass, a
    /// body of at most `bodyBytes`, so they refuse a body as large again
    /// (`APNsPoolConnections.canTake`) and are not asked.
    private var passRefusals = (count: 0, bodyBytes: 0)

    private var consecutiveFailures = 0
    /// Until then (loop nanoseconds), no connection is tried.
    private var backoffUntil: UInt64 = 0
    private var backoffTimerArmed = false

    init(limits: Limits, random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.limits = limits
        self.random = random
    }

    // MARK: Sending

    mutating func send(_ request: PooledNotification, now: UInt64, connections view: some APNsPoolConnections,
                       into actions: inout [Action]) {
        switch state {
        case .running:
            break
        case .shuttingDown:
            return actions.append(.completeOnNextPass(finishedNow(request), .allConnectionsDown))
        case .submitting:
            impossible("send")
        }
        if waitingCount == 0, let connection = connection(taking: request, view) {
            state = .submitting(request, on: connection, origin: .send, now: now)
            return actions.append(.submit(request, on: connection))
        }
        queueOrRefuse(request, now: now, view, into: &actions)
    }

    /// `request` found no connection: it waits, or is refused at once.
    private mutating func queueOrRefuse(_ request: PooledNotification, now: UInt64, _ view: some APNsPoolConnections,
                                        into actions: inout [Action]) {
        // The clock first: outside a backoff no connection is asked about.
        if now < backoffUntil && !hasLiveConnection(view) {
            return actions.append(.completeOnNextPass(finishedNow(request), .allConnectionsDown))
        }
        if waitingCount >= limits.maxQueued {
            return actions.append(.completeOnNextPass(finishedNow(request), .overloaded))
        }
        trackAnswerDeadline(request, now: now, into: &actions)
        waiting.append(request)
        waitingCount += 1
        openConnectionIfNeeded(now: now, view, into: &actions)
    }

    /// The session took the request as `streamID`.
    mutating func submitted(streamID: Int32, connections view: some APNsPoolConnections, into actions: inout [Action]) {
        guard case .submitting(let request, let connection, let origin, let now) = state else { impossible("submitted") }
        state = .running
        request.phase = .inFlight(connection, streamID: streamID)
        inFlightCount += 1
        switch origin {
        case .send:
            trackAnswerDeadline(request, now: now, into: &actions)
        case .dispatch(let next):
            dispatchNext(then: next, now: now, view, into: &actions)
        }
    }

    /// The session takes no new stream (GOAWAY raced in): the request waits.
    mutating func submitRefused(connections view: some APNsPoolConnections, into actions: inout [Action]) {
        guard case .submitting(let request, _, let origin, let now) = state else { impossible("submitRefused") }
        state = .running
        switch origin {
        case .send:
            queueOrRefuse(request, now: now, view, into: &actions)
        case .dispatch(let next):
            // Put it back first in line and stop: a session that refuses
            // while showing capacity would spin here.
            resends.putBackFirst(request)
            waitingCount += 1
            scheduleDispatch(into: &actions)
            openConnectionIfNeeded(now: now, view, into: &actions)
            if next == .shutdown { beginShutdown(into: &actions) }
        }
    }

    /// HTTP/2 cannot carry the request (a header it forbids): APNs never saw
    /// it, and no other connection would take it.
    mutating func submitUnsendable(_ reason: String, connections view: some APNsPoolConnections,
                                   into actions: inout [Action]) {
        guard case .submitting(let request, _, let origin, let now) = state else { impossible("submitUnsendable") }
        state = .running
        let outcome = DeliveryOutcome.streamFailed("request not sendable over HTTP/2: \(reason)")
        switch origin {
        case .send:
            actions.append(.completeOnNextPass(finishedNow(request), outcome))
        case .dispatch(let next):
            complete(request, APNsDelivery(outcome: outcome), into: &actions)
            dispatchNext(then: next, now: now, view, into: &actions)
        }
    }

    // MARK: Answers

    /// The connection finished the request: APNs' answer or a stream failure.
    mutating func requestFinished(_ request: PooledNotification, with delivery: APNsDelivery,
                                  connections view: some APNsPoolConnections, into actions: inout [Action]) {
        if case .submitting = state { impossible("requestFinished") }
        // Late: the answer timeout completed it already.
        guard !request.isCompleted else { return }
        inFlightCount -= 1
        // The status the connection read decides first: on the 200 path
        // nothing more is read.
        if let status = request.status, status == 403 || status == 429,
           resendAfterTokenAnswer(request, delivery, view, into: &actions) {
            return
        }
        complete(request, delivery, into: &actions)
    }

    /// The answers about the provider token that sending again mends
    /// (403 UnrelatedKeyIdInToken, 429 TooManyProviderTokenUpdates), for a
    /// request that carried a token: true when the request goes again.
    private mutating func resendAfterTokenAnswer(_ request: PooledNotification, _ delivery: APNsDelivery,
                                                 _ view: some APNsPoolConnections, into actions: inout [Action]) -> Bool {
        guard case .apns(_, let reason?, _) = delivery.outcome, let issuedAt = request.tokenIssuedAt,
              case .inFlight(let connection, _) = request.phase else { return false }
        switch reason {
        case .unrelatedKeyIdInToken:
            // Bound to another key for good: whatever becomes of this
            // request, nothing more goes there.
            if connections.contains(connection), view.state(of: connection) < .draining {
                actions.append(.drainConnection(connection))
            }
        case .tooManyProviderTokenUpdates:
            actions.append(.tokenUpdatesRefused(issuedAt: issuedAt))
            guard !request.resentForTokenUpdates else { return false }
            request.resentForTokenUpdates = true
        default:
            return false
        }
        guard case .running = state, request.resendCount < Self.maxResends else { return false }
        request.resendCount += 1
        request.forgetAnswer()
        request.phase = .queued
        resends.append(request)
        waitingCount += 1
        scheduleDispatch(into: &actions)
        return true
    }

    /// The server provably never processed `requests` (REFUSED_STREAM, above
    /// GOAWAY's last-stream-id, frames never handed to OpenSSL): send them
    /// again, on the next dispatch pass, before the waiting ones.
    mutating func requestsReturnedUnprocessed(_ requests: [PooledNotification], into actions: inout [Action]) {
        let shuttingDown: Bool
        switch state {
        case .running: shuttingDown = false
        case .shuttingDown: shuttingDown = true
        case .submitting: impossible("requestsReturnedUnprocessed")
        }
        // Late ones (the answer timeout completed them already) are skipped.
        for request in requests where !request.isCompleted {
            inFlightCount -= 1
            request.resendCount += 1
            if request.resendCount > Self.maxResends || shuttingDown {
                let detail = shuttingDown ? "refused by APNs during shutdown" : "refused by APNs \(request.resendCount) times"
                complete(request, APNsDelivery(outcome: .streamFailed(detail)), into: &actions)
                continue
            }
            request.phase = .queued
            resends.append(request)
            waitingCount += 1
        }
        scheduleDispatch(into: &actions)
    }

    // MARK: Answer deadlines

    private mutating func trackAnswerDeadline(_ request: PooledNotification, now: UInt64, into actions: inout [Action]) {
        // Measured from `send`: the relay must answer before Mastodon gives up.
        let (deadline, overflow) = now.addingReportingOverflow(limits.answerTimeout)
        request.answerDeadline = overflow ? .max : deadline
        deadlines.append(request)
        armDeadlineTimerIfNeeded(into: &actions)
    }

    private mutating func armDeadlineTimerIfNeeded(into actions: inout [Action]) {
        guard !deadlineTimerArmed, let first = deadlines.first else { return }
        deadlineTimerArmed = true
        actions.append(.armDeadlineTimer(at: first.answerDeadline))
    }

    /// Times out, in send order, every request whose deadline has passed,
    /// then arms the timer for the next one.
    mutating func deadlineTimerFired(now: UInt64, into actions: inout [Action]) {
        if case .submitting = state { impossible("deadlineTimerFired") }
        deadlineTimerArmed = false
        while let first = deadlines.first, first.answerDeadline <= now {
            _ = deadlines.popFirst()
            answerTimedOut(first, into: &actions)
        }
        armDeadlineTimerIfNeeded(into: &actions)
    }

    private mutating func answerTimedOut(_ request: PooledNotification, into actions: inout [Action]) {
        switch request.phase {
        case .queued:
            // It stays in its queue as a finished entry, skipped when reached.
            waitingCount -= 1
        case .inFlight(let connection, let streamID):
            inFlightCount -= 1
            request.phase = .finished
            actions.append(.cancelStream(streamID, on: connection))
        case .finished:
            // A completed request leaves `deadlines` as it completes.
            return
        }
        complete(request, APNsDelivery(outcome: .answerTimedOut), into: &actions)
    }

    // MARK: Connections

    /// The connection reports room: the server's SETTINGS arrived (it is
    /// ready), or a stream closed, or the window grew.
    mutating func connectionCanTakeMore(_ connection: ConnectionID, now: UInt64, connections view: some APNsPoolConnections,
                                        into actions: inout [Action]) {
        if case .submitting = state { impossible("connectionCanTakeMore") }
        if view.state(of: connection) == .ready {
            consecutiveFailures = 0
            backoffUntil = 0
        }
        dispatch(then: .nothing, now: now, view, into: &actions)
    }

    /// The server sent GOAWAY: no new stream goes to the connection; another
    /// may have to open for what waits.
    mutating func connectionDraining(_ connection: ConnectionID, into actions: inout [Action]) {
        if case .submitting = state { impossible("connectionDraining") }
        scheduleDispatch(into: &actions)
    }

    /// An attempt failed before the server's SETTINGS (`failure` is of class
    /// connect or TLS). Its requests were none: nothing is sent before ready.
    mutating func connectionAttemptFailed(_ connection: ConnectionID, _ failure: ConnectionFailure, now: UInt64,
                                          connections view: some APNsPoolConnections, into actions: inout [Action]) {
        if case .submitting = state { impossible("connectionAttemptFailed") }
        connections.removeAll { $0 == connection }
        consecutiveFailures += 1
        backoffUntil = now &+ Backoff(base: limits.backoffBase, cap: limits.backoffCap)
            .delay(afterFailures: consecutiveFailures, random: &random)
        if !hasLiveConnection(view) { failWaiting(failure.outcomeForWaitingRequest, into: &actions) }
        connectionGone(into: &actions)
    }

    /// A connection closed after it was ready, lost or in order. Its requests
    /// were finished or handed back before this.
    mutating func connectionClosed(_ connection: ConnectionID, into actions: inout [Action]) {
        if case .submitting = state { impossible("connectionClosed") }
        connections.removeAll { $0 == connection }
        connectionGone(into: &actions)
    }

    private mutating func connectionGone(into actions: inout [Action]) {
        if case .shuttingDown = state {
            failWaiting(.allConnectionsDown, into: &actions)
            checkShutdownDone(into: &actions)
        } else {
            scheduleDispatch(into: &actions)
        }
    }

    mutating func backoffTimerFired(now: UInt64, connections view: some APNsPoolConnections, into actions: inout [Action]) {
        switch state {
        case .running:
            backoffTimerArmed = false
            openConnectionIfNeeded(now: now, view, into: &actions)
        case .shuttingDown, .submitting:
            // Shutdown cancels it (a cancelled loop timer never runs).
            impossible("backoffTimerFired")
        }
    }

    private func hasLiveConnection(_ view: some APNsPoolConnections) -> Bool {
        for position in connections.indices where view.state(of: connections[position], at: position) < .draining {
            return true
        }
        return false
    }

    private func connection(taking request: PooledNotification, _ view: some APNsPoolConnections) -> ConnectionID? {
        let bodyBytes = request.notification.payload.count
        for position in connections.indices
        where view.canTake(connections[position], at: position, bodyBytes: bodyBytes) {
            return connections[position]
        }
        return nil
    }

    /// `connection(taking:_:)` in a dispatch pass, where the connections
    /// that refused a body as large earlier in the pass are not asked again.
    /// Under load the first connections' windows are full and a pass places
    /// a dozen requests: asking each of them again for every request cost
    /// about two `canTake`s per notification, 2,000 instructions on the
    /// provider path (callgrind, 4 connections).
    private mutating func connectionInPass(taking request: PooledNotification,
                                           _ view: some APNsPoolConnections) -> ConnectionID? {
        let bodyBytes = request.notification.payload.count
        var position = bodyBytes >= passRefusals.bodyBytes ? passRefusals.count : 0
        while position < connections.count,
              !view.canTake(connections[position], at: position, bodyBytes: bodyBytes) {
            position += 1
        }
        passRefusals = (position, bodyBytes)
        return position < connections.count ? connections[position] : nil
    }

    private mutating func openConnectionIfNeeded(now: UInt64, _ view: some APNsPoolConnections,
                                                 into actions: inout [Action]) {
        guard case .running = state, waitingCount > 0 else { return }
        // One pass over the connections, each asked once (this runs for
        // every request that waits): none may still be on its way to ready,
        // and fewer than the limit may be ready (draining ones excluded).
        var usable = 0
        for position in connections.indices {
            let connectionState = view.state(of: connections[position], at: position)
            if connectionState < .ready { return }
            if connectionState <= .ready { usable += 1 }
        }
        guard usable < limits.maxConnections else { return }
        if now < backoffUntil {
            if !backoffTimerArmed {
                backoffTimerArmed = true
                actions.append(.armBackoffTimer(at: backoffUntil))
            }
            return
        }
        let connection = ConnectionID(rawValue: nextConnectionID)
        nextConnectionID += 1
        connections.append(connection)
        actions.append(.openConnection(connection))
    }

    // MARK: Dispatch

    /// Sends, in order, what waits and fits; opens a connection for the rest.
    private mutating func dispatch(then next: AfterDispatch, now: UInt64, _ view: some APNsPoolConnections,
                                   into actions: inout [Action]) {
        dispatchScheduled = false
        passRefusals = (0, 0)
        dispatchNext(then: next, now: now, view, into: &actions)
    }

    private mutating func dispatchNext(then next: AfterDispatch, now: UInt64, _ view: some APNsPoolConnections,
                                       into actions: inout [Action]) {
        // Nothing waits once shutdown began (it failed what waited; new
        // requests and handed-back ones complete at once).
        if case .running = state, waitingCount > 0,
           // In order: a request that fits nowhere yet waits, and so do those behind it.
           let front = resends.peekFirst() ?? waiting.peekFirst(),
           let connection = connectionInPass(taking: front, view),
           let request = resends.popFirst() ?? waiting.popFirst() {
            waitingCount -= 1
            state = .submitting(request, on: connection, origin: .dispatch(then: next), now: now)
            return actions.append(.submit(request, on: connection))
        }
        openConnectionIfNeeded(now: now, view, into: &actions)
        checkShutdownDone(into: &actions)
        if next == .shutdown { beginShutdown(into: &actions) }
    }

    /// The dispatch pass asked for by `scheduleDispatch`.
    mutating func dispatchPassRan(now: UInt64, connections view: some APNsPoolConnections, into actions: inout [Action]) {
        if case .submitting = state { impossible("dispatchPassRan") }
        dispatch(then: .nothing, now: now, view, into: &actions)
    }

    private mutating func scheduleDispatch(into actions: inout [Action]) {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        actions.append(.scheduleDispatch)
    }

    // MARK: Completions

    private mutating func complete(_ request: PooledNotification, _ delivery: APNsDelivery, into actions: inout [Action]) {
        guard !request.isCompleted else { return }
        deadlines.remove(request)
        actions.append(.complete(finishedNow(request), delivery))
    }

    /// Marks a request completed (its completion is decided).
    private func finishedNow(_ request: PooledNotification) -> PooledNotification {
        request.isCompleted = true
        request.phase = .finished
        return request
    }

    private mutating func failWaiting(_ outcome: DeliveryOutcome, into actions: inout [Action]) {
        while let request = resends.popFirst() ?? waiting.popFirst() {
            waitingCount -= 1
            complete(request, APNsDelivery(outcome: outcome), into: &actions)
        }
    }

    // MARK: Shutdown

    /// Sends what fits, fails what still waits, drains every connection (open
    /// streams finish, bounded by the answer timeout), then `shutdownDone`.
    /// Again while under way: `shutdownDone` once more when it is over.
    mutating func shutdown(now: UInt64, connections view: some APNsPoolConnections, into actions: inout [Action]) {
        switch state {
        case .running:
            dispatch(then: .shutdown, now: now, view, into: &actions)
        case .shuttingDown:
            state = .shuttingDown(doneAwaited: true)
            checkShutdownDone(into: &actions)
        case .submitting:
            impossible("shutdown")
        }
    }

    private mutating func beginShutdown(into actions: inout [Action]) {
        state = .shuttingDown(doneAwaited: true)
        if backoffTimerArmed {
            backoffTimerArmed = false
            actions.append(.cancelBackoffTimer)
        }
        failWaiting(.allConnectionsDown, into: &actions)
        for connection in connections { actions.append(.drainConnection(connection)) }
        checkShutdownDone(into: &actions)
    }

    private mutating func checkShutdownDone(into actions: inout [Action]) {
        guard case .shuttingDown(doneAwaited: true) = state, connections.isEmpty, inFlightCount == 0 else { return }
        state = .shuttingDown(doneAwaited: false)
        // Nothing is left to time out (every request has completed).
        if deadlineTimerArmed {
            deadlineTimerArmed = false
            actions.append(.cancelDeadlineTimer)
        }
        actions.append(.shutdownDone)
    }

    private func impossible(_ event: String) -> Never {
        preconditionFailure("APNsPoolMachine: event \(event) in state \(state)")
    }
}
