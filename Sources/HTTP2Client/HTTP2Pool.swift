import EventLoop

/// The connections to one endpoint (an APNs environment, FCM) from one
/// event loop, and the requests waiting for a stream: performs what `HTTP2PoolMachine` decides
/// (the policy lives there), as `HTTP2Connection` does for
/// `HTTP2ConnectionMachine`. Here: the connections themselves, the loop's
/// timers, the completions, and the counts a client's status reports.
///
/// Confined to its loop, and an event's actions are carried out one run at
/// a time (`isPerforming`, `isHandingOver`): its stored state (the machine,
/// which events mutate in place, and the flags, timers and counts beside
/// it) is never accessed twice at once, so its dynamic exclusivity checks
/// go (`@exclusivity(unchecked)`). Measured with callgrind: the checks cost
/// about 1,600 instructions per notification on the machine's state
/// (swift_beginAccess, AccessSet::insert, the thread-local lookups), and
/// about 80 each on the flags read per send and per answer.
public final class HTTP2Pool: HTTP2ConnectionOwner {
    private let loop: EventLoop
    private let endpoint: HTTP2Endpoint

    @exclusivity(unchecked) private var machine: HTTP2PoolMachine
    /// Open connections with the ids the machine gave them, oldest first:
    /// the order of the machine's own list, so the position it asks about
    /// holds the connection (`HTTP2PoolConnections`). Only connections it has
    /// just asked to open and this pool has not made yet are missing, at
    /// the end.
    @exclusivity(unchecked) private var connections: [(id: HTTP2PoolMachine.ConnectionID, connection: HTTP2Connection)] = []
    /// The actions of the event being handled; emptied, not freed, after
    /// each (no allocation per event once it has grown), unless a burst
    /// (every waiting request failed at once) made it large.
    @exclusivity(unchecked) private var actions: [HTTP2PoolMachine.Action] = []
    /// An event's actions are being carried out: an event they cause (a
    /// connection that closes as it is drained) adds its actions to the same
    /// run, after those already decided.
    @exclusivity(unchecked) private var isPerforming = false
    /// What runs callers' code, kept until the event's other actions are
    /// carried out (a completion may call `send`).
    @exclusivity(unchecked) private var handovers: [Handover] = []
    @exclusivity(unchecked) private var isHandingOver = false
    @exclusivity(unchecked) private var deadlineTimer: TimerID?
    @exclusivity(unchecked) private var backoffTimer: TimerID?
    /// Who waits for the shutdown, in the order they asked.
    @exclusivity(unchecked) private var shutdownWaiters: [() -> Void] = []

    private enum Handover {
        case completion(PooledRequest, PooledAnswer)
        case shutdownDone
    }

    /// When `send` last ran (loop nanoseconds): the client closes a pool
    /// idle for its idle timeout.
    @exclusivity(unchecked) public private(set) var lastSend: UInt64 = 0
    @exclusivity(unchecked) public private(set) var counters = PoolCounters()
    @exclusivity(unchecked) public private(set) var lastConnectFailure: ConnectionFailure?
    /// The last ready connection that died (EOF, reset, PING timeout…).
    @exclusivity(unchecked) public private(set) var lastConnectionLoss: ConnectionFailure?

    /// Requests waiting for a stream.
    public var queuedCount: Int { machine.waitingCount }
    /// Requests on a stream, waiting for the answer.
    public var inFlightCount: Int { machine.inFlightCount }

    public init(loop: EventLoop, endpoint: HTTP2Endpoint, limits: HTTP2PoolMachine.Limits) {
        self.loop = loop
        self.endpoint = endpoint
        machine = HTTP2PoolMachine(limits: limits)
    }

    // MARK: Events

    public func send(_ request: PooledRequest) {
        counters.sent += 1
        // Read once: `EventLoop.now` is the same for the whole loop pass,
        // and each read is an exclusivity-checked access to the loop
        // (callgrind: about 80 instructions).
        let now = loop.now
        lastSend = now
        handle { $0.send(request, now: now, connections: self, into: &$1) }
    }

    /// Sends what fits, fails what still waits, sends GOAWAY on every
    /// connection, lets open streams finish (bounded by the answer timeout),
    /// then calls `done`.
    public func shutdown(_ done: @escaping () -> Void) {
        shutdownWaiters.append(done)
        handle { $0.shutdown(now: loop.now, connections: self, into: &$1) }
    }

    /// Hands one event to the machine and carries out the actions it decides.
    private func handle(_ event: (inout HTTP2PoolMachine, inout [HTTP2PoolMachine.Action]) -> Void) {
        event(&machine, &actions)
        guard !isPerforming, !actions.isEmpty else { return }
        // An answer's event decides one action, its completion: with nothing
        // else to carry out first, it runs at once, moved out of `actions`
        // rather than copied through `handovers` (the order is the same:
        // `handovers` is empty outside a run). Callgrind: the copies and
        // their retains cost about 400 instructions per notification.
        if actions.count == 1, !isHandingOver, case .complete = actions[0],
           case .complete(let request, let answer) = actions.removeLast() {
            isHandingOver = true
            deliver(request, answer)
            return runHandovers()
        }
        isPerforming = true
        var index = 0
        while index < actions.count {
            // The last action is moved out rather than copied: in a dispatch
            // pass each submit's result decides the next submit, so the
            // buffer holds one action at a time and none is copied, retained
            // and destroyed twice (callgrind: about 190 instructions per
            // notification on the provider path).
            if index == actions.count - 1 {
                perform(actions.removeLast())
            } else {
                perform(actions[index])
                index += 1
            }
        }
        Self.empty(&actions)
        isPerforming = false
        handOver()
    }

    /// Entries the two buffers keep between events (about 16 KB each):
    /// an event's actions are a handful, a dispatch pass's a few dozen.
    private static let keptCapacity = 256

    /// Empties a buffer, keeping its storage unless a burst (every waiting
    /// request failed at once) made it large. Popped rather than
    /// `removeAll(keepingCapacity:)`, whose generic `replaceSubrange` path
    /// callgrind put at about 270 instructions per notification for a
    /// buffer of one or two entries.
    @inline(__always)
    private static func empty<Element>(_ buffer: inout [Element]) {
        guard buffer.capacity <= keptCapacity else { return buffer = [] }
        while buffer.popLast() != nil {}
    }

    private func perform(_ action: consuming HTTP2PoolMachine.Action) {
        switch consume action {
        case .submit(let request, let id):
            // The result is the machine's next event (nothing else happens
            // in between: a submit calls nothing back).
            switch connection(id)?.submit(request) ?? .refused {
            case .submitted(let streamID): machine.submitted(streamID: streamID, connections: self, into: &actions)
            case .refused: machine.submitRefused(connections: self, into: &actions)
            case .unsendable(let reason): machine.submitUnsendable(reason, connections: self, into: &actions)
            }
        case .openConnection(let id):
            let connection = HTTP2Connection(loop: loop, endpoint: endpoint, owner: self)
            connections.append((id, connection))
            counters.connectionsOpened += 1
            connection.start()
        case .drainConnection(let id):
            connection(id)?.drain()
        case .cancelStream(let streamID, let id):
            connection(id)?.cancel(streamID: streamID)
        case .armDeadlineTimer(let deadline):
            deadlineTimer = loop.schedule(atNanoseconds: deadline) { [weak self] in
                guard let self else { return }
                self.deadlineTimer = nil
                self.handle { $0.deadlineTimerFired(now: self.loop.now, into: &$1) }
            }
        case .cancelDeadlineTimer:
            if let deadlineTimer { loop.cancel(deadlineTimer) }
            deadlineTimer = nil
        case .armBackoffTimer(let deadline):
            backoffTimer = loop.schedule(atNanoseconds: deadline) { [weak self] in
                guard let self else { return }
                self.backoffTimer = nil
                self.handle { $0.backoffTimerFired(now: self.loop.now, connections: self, into: &$1) }
            }
        case .cancelBackoffTimer:
            if let backoffTimer { loop.cancel(backoffTimer) }
            backoffTimer = nil
        case .scheduleDispatch:
            loop.schedule(after: .zero) { [weak self] in
                guard let self else { return }
                self.handle { $0.dispatchPassRan(now: self.loop.now, connections: self, into: &$1) }
            }
        case .complete(let request, let answer):
            handovers.append(.completion(request, answer))
        case .completeOnNextPass(let request, let failure):
            loop.schedule(after: .zero) { [weak self] in
                self?.deliver(request, .failed(failure))
            }
        case .shutdownDone:
            handovers.append(.shutdownDone)
        case .credentialRefused(let refusal, let stamp):
            endpoint.authorizer?.credentialRefused(refusal, stamp: stamp)
        }
    }

    /// Runs the completions (and shutdown callbacks) decided, in order. One
    /// that sends adds its own to the end of the same run.
    private func handOver() {
        guard !isHandingOver, !handovers.isEmpty else { return }
        isHandingOver = true
        runHandovers()
    }

    /// `handOver`'s run, `isHandingOver` set by the caller.
    private func runHandovers() {
        var index = 0
        while index < handovers.count {
            let handover = handovers[index]
            index += 1
            switch handover {
            case .completion(let request, let answer):
                deliver(request, answer)
            case .shutdownDone:
                let waiters = shutdownWaiters
                shutdownWaiters.removeAll()
                for done in waiters { done() }
            }
        }
        Self.empty(&handovers)
        isHandingOver = false
    }

    private func deliver(_ request: PooledRequest, _ answer: PooledAnswer) {
        counters.completed += 1
        if case .failed(.answerTimedOut) = answer { counters.answerTimeouts += 1 }
        request.complete(answer)
    }

    // MARK: Connections

    private func connection(_ id: HTTP2PoolMachine.ConnectionID) -> HTTP2Connection? {
        for index in connections.indices where connections[index].id == id { return connections[index].connection }
        return nil
    }

    private func id(of connection: HTTP2Connection) -> HTTP2PoolMachine.ConnectionID? {
        for entry in connections where entry.connection === connection { return entry.id }
        return nil
    }

    public func connectionCounts(into counts: inout [HTTP2ConnectionState: Int]) {
        for entry in connections { counts[entry.connection.state, default: 0] += 1 }
    }

    // MARK: HTTP2ConnectionOwner

    func connectionHasCapacity(_ connection: HTTP2Connection) {
        guard let id = id(of: connection) else { return }
        handle { $0.connectionCanTakeMore(id, now: loop.now, connections: self, into: &$1) }
    }

    func connectionIsDraining(_ connection: HTTP2Connection) {
        counters.goAwaysReceived += 1
        guard let id = id(of: connection) else { return }
        handle { $0.connectionDraining(id, into: &$1) }
    }

    func connectionSentPing(_ connection: HTTP2Connection) {
        counters.pingsSent += 1
    }

    func connection(_ connection: HTTP2Connection, finished request: PooledRequest, with answer: PooledAnswer) {
        handle { $0.requestFinished(request, with: answer, connections: self, into: &$1) }
    }

    func connection(_ connection: HTTP2Connection, returnedUnprocessed requests: [PooledRequest]) {
        for request in requests where !request.isCompleted { counters.resent += 1 }
        handle { $0.requestsReturnedUnprocessed(requests, into: &$1) }
    }

    func connectionDidClose(_ connection: HTTP2Connection, failure: ConnectionFailure?, wasReady: Bool) {
        guard let index = connections.firstIndex(where: { $0.connection === connection }) else { return }
        let id = connections.remove(at: index).id
        if let failure, !wasReady {
            counters.connectFailures += 1
            lastConnectFailure = failure
            handle { $0.connectionAttemptFailed(id, failure, now: loop.now, connections: self, into: &$1) }
            return
        }
        if let failure {
            counters.connectionsLost += 1
            lastConnectionLoss = failure
        }
        handle { $0.connectionClosed(id, into: &$1) }
    }
}

// MARK: HTTP2PoolConnections

extension HTTP2Pool: HTTP2PoolConnections {
    func state(of id: HTTP2PoolMachine.ConnectionID) -> HTTP2ConnectionState {
        connection(id)?.state ?? .idle
    }

    func canTake(_ id: HTTP2PoolMachine.ConnectionID, bodyBytes: Int) -> Bool {
        connection(id)?.canTake(bodyBytes: bodyBytes) ?? false
    }

    @inline(__always)
    func state(of id: HTTP2PoolMachine.ConnectionID, at position: Int) -> HTTP2ConnectionState {
        guard position < connections.count, connections[position].id == id else { return state(of: id) }
        return connections[position].connection.state
    }

    @inline(__always)
    func canTake(_ id: HTTP2PoolMachine.ConnectionID, at position: Int, bodyBytes: Int) -> Bool {
        guard position < connections.count, connections[position].id == id else { return canTake(id, bodyBytes: bodyBytes) }
        return connections[position].connection.canTake(bodyBytes: bodyBytes)
    }
}
