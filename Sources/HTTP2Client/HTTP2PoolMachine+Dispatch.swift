// The pool machine's dispatch pass: what waits goes, in order, to the first
// connection that takes it; a connection opens for the rest.

extension HTTP2PoolMachine {
    /// Sends, in order, what waits and fits; opens a connection for the rest.
    mutating func dispatch(then next: AfterDispatch, now: UInt64, _ view: some HTTP2PoolConnections,
                           into actions: inout [Action]) {
        dispatchScheduled = false
        passRefusals = (0, 0)
        dispatchNext(then: next, now: now, view, into: &actions)
    }

    mutating func dispatchNext(then next: AfterDispatch, now: UInt64, _ view: some HTTP2PoolConnections,
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
    mutating func dispatchPassRan(now: UInt64, connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
        if case .submitting = state { impossible("dispatchPassRan") }
        dispatch(then: .nothing, now: now, view, into: &actions)
    }

    mutating func scheduleDispatch(into actions: inout [Action]) {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        actions.append(.scheduleDispatch)
    }

    // MARK: The connection a request goes to, or a new one

    func connection(taking request: PooledRequest, _ view: some HTTP2PoolConnections) -> ConnectionID? {
        let bodyBytes = request.bodyByteCount
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
    mutating func connectionInPass(taking request: PooledRequest,
                                   _ view: some HTTP2PoolConnections) -> ConnectionID? {
        let bodyBytes = request.bodyByteCount
        var position = bodyBytes >= passRefusals.bodyBytes ? passRefusals.count : 0
        while position < connections.count,
              !view.canTake(connections[position], at: position, bodyBytes: bodyBytes) {
            position += 1
        }
        passRefusals = (position, bodyBytes)
        return position < connections.count ? connections[position] : nil
    }

    mutating func openConnectionIfNeeded(now: UInt64, _ view: some HTTP2PoolConnections,
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
}
