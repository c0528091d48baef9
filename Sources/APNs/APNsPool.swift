import APNsCore
import EventLoop

/// The connections to one APNs environment from one event loop, and the
/// requests waiting for a stream: performs what `APNsPoolMachine` decides
/// (the policy lives there), as `APNsConnection` does for
/// `APNsConnectionMachine`. Here: the connections themselves, the loop's
/// timers, the completions, and the counts `APNsClient.status` reports.
///
/// Confined to its loop, and an event's actions are carried out one run at
/// a time (`isPerforming`, `isHandingOver`): its stored state (the machine,
/// which events mutate in place, and the flags, timers and counts beside
/// it) is never accessed twice at once, so its dynamic exclusivity checks
/// go (`@exclusivity(unchecked)`). Measured with callgrind: the checks cost
/// about 1,600 instructions per notification on the machine's state
/// (swift_beginAccess, AccessSet::insert, the thread-local lookups), and
/// about 80 each on the flags read per send and per answer.
final class APNsPool: APNsConnectionOwner {
    private let loop: EventLoop
    private let endpoint: APNsEndpoint

    @exclusivity(unchecked) private var machine: APNsPoolMachine
    /// Open connections with the ids the machine gave them, oldest first:
    /// the order of the machine's own list, so the position it asks about
    /// holds the connection (`APNsPoolConnections`). Only connections it has
    /// just asked to open and this pool has not made yet are missing, at
    /// the end.
    @exclusivity(unchecked) private var connections: [(id: APNsPoolMachine.ConnectionID, connection: APNsConnection)] = []
    /// The actions of the event being handled; emptied, not freed, after
    /// each (no allocation per event once it has grown), unless a burst
    /// (every waiting request failed at once) made it large.
    @exclusivity(unchecked) private var actions: [APNsPoolMachine.Action] = []
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
        case completion(PooledNotification, APNsDelivery)
        case shutdownDone
    }

    /// When `send` last ran (loop nanoseconds): the client closes a pool
    /// idle for its idle timeout.
    @exclusivity(unchecked) private(set) var lastSend: UInt64 = 0
    @exclusivity(unchecked) private(set) var counters = APNsCounters()
    @exclusivity(unchecked) private(set) var lastConnectFailure: ConnectionFailure?
    /// The last ready connection that died (EOF, reset, PING timeout…).
    @exclusivity(unchecked) private(set) var lastConnectionLoss: ConnectionFailure?

    /// Requests waiting for a stream.
    var queuedCount: Int { machine.waitingCount }
    /// Requests on a stream, waiting for the answer.
    var inFlightCount: Int { machine.inFlightCount }

    init(loop: EventLoop, endpoint: APNsEndpoint, limits: APNsPoolMachine.Limits) {
        self.loop = loop
        self.endpoint = endpoint
        machine = APNsPoolMachine(limits: limits)
    }

    // MARK: Events

    func send(_ request: PooledNotification) {
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
    func shutdown(_ done: @escaping () -> Void) {
        shutdownWaiters.append(done)
        handle { $0.shutdown(now: loop.now, connections: self, into: &$1) }
    }

    /// Hands one event to the machine and carries out the actions it decides.
    private func handle(_ event: (inout APNsPoolMachine, inout [APNsPoolMachine.Action]) -> Void) {
        event(&machine, &actions)
        guard !isPerforming, !actions.isEmpty else { return }
        // An answer's event decides one action, its completion: with nothing
        // else to carry out first, it runs at once, moved out of `actions`
        // rather than copied through `handovers` (the order is the same:
        // `handovers` is empty outside a run). Callgrind: the copies and
        // their retains cost about 400 instructions per notification.
        if actions.count == 1, !isHandingOver, case .complete = actions[0],
           case .complete(let request, let delivery) = actions.removeLast() {
            isHandingOver = true
            deliver(request, delivery)
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

    private func perform(_ action: consuming APNsPoolMachine.Action) {
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
            let connection = APNsConnection(loop: loop, endpoint: endpoint, owner: self)
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
        case .complete(let request, let delivery):
            handovers.append(.completion(request, delivery))
        case .completeOnNextPass(let request, let outcome):
            loop.schedule(after: .zero) { [weak self] in
                self?.deliver(request, APNsDelivery(outcome: outcome))
            }
        case .shutdownDone:
            handovers.append(.shutdownDone)
        case .tokenUpdatesRefused(let issuedAt):
            endpoint.tokenProvider?.tokenUpdatesRefused(issuedAt: issuedAt, now: endpoint.wallClock())
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
            case .completion(let request, let delivery):
                deliver(request, delivery)
            case .shutdownDone:
                let waiters = shutdownWaiters
                shutdownWaiters.removeAll()
                for done in waiters { done() }
            }
        }
        Self.empty(&handovers)
        isHandingOver = false
    }

    private func deliver(_ request: PooledNotification, _ delivery: APNsDelivery) {
        counters.completed += 1
        if case .answerTimedOut = delivery.outcome { counters.answerTimeouts += 1 }
        if delivery.outcome.credentialVerdict == .rejected, case .apns(_, let reason, _) = delivery.outcome,
           reason == .expiredProviderToken || reason == .invalidProviderToken,
           let provider = endpoint.tokenProvider, let issuedAt = request.tokenIssuedAt {
            provider.tokenRejected(issuedAt: issuedAt, now: endpoint.wallClock())
        }
        request.complete(delivery)
    }

    // MARK: Connections

    private func connection(_ id: APNsPoolMachine.ConnectionID) -> APNsConnection? {
        for index in connections.indices where connections[index].id == id { return connections[index].connection }
        return nil
    }

    private func id(of connection: APNsConnection) -> APNsPoolMachine.ConnectionID? {
        for entry in connections where entry.connection === connection { return entry.id }
        return nil
    }

    func connectionCounts(into counts: inout [APNsConnectionState: Int]) {
        for entry in connections { counts[entry.connection.state, default: 0] += 1 }
    }

    // MARK: APNsConnectionOwner

    func connectionHasCapacity(_ connection: APNsConnection) {
        guard let id = id(of: connection) else { return }
        handle { $0.connectionCanTakeMore(id, now: loop.now, connections: self, into: &$1) }
    }

    func connectionIsDraining(_ connection: APNsConnection) {
        counters.goAwaysReceived += 1
        guard let id = id(of: connection) else { return }
        handle { $0.connectionDraining(id, into: &$1) }
    }

    func connectionSentPing(_ connection: APNsConnection) {
        counters.pingsSent += 1
    }

    func connection(_ connection: APNsConnection, finished request: PooledNotification, with delivery: APNsDelivery) {
        handle { $0.requestFinished(request, with: delivery, connections: self, into: &$1) }
    }

    func connection(_ connection: APNsConnection, returnedUnprocessed requests: [PooledNotification]) {
        for request in requests where !request.isCompleted { counters.resent += 1 }
        handle { $0.requestsReturnedUnprocessed(requests, into: &$1) }
    }

    func connectionDidClose(_ connection: APNsConnection, failure: ConnectionFailure?, wasReady: Bool) {
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

// MARK: APNsPoolConnections

extension APNsPool: APNsPoolConnections {
    func state(of id: APNsPoolMachine.ConnectionID) -> APNsConnectionState {
        connection(id)?.state ?? .idle
    }

    func canTake(_ id: APNsPoolMachine.ConnectionID, bodyBytes: Int) -> Bool {
        connection(id)?.canTake(bodyBytes: bodyBytes) ?? false
    }

    @inline(__always)
    func state(of id: APNsPoolMachine.ConnectionID, at position: Int) -> APNsConnectionState {
        guard position < connections.count, connections[position].id == id else { return state(of: id) }
        return connections[position].connection.state
    }

    @inline(__always)
    func canTake(_ id: APNsPoolMachine.ConnectionID, at position: Int, bodyBytes: Int) -> Bool {
        guard position < connections.count, connections[position].id == id else { return canTake(id, bodyBytes: bodyBytes) }
        return connections[position].connection.canTake(bodyBytes: bodyBytes)
    }
}
