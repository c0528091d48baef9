import EventLoop

// What the pool machine hears of its connections: ready or with room,
// draining, failed attempts (and the backoff they start), closed.

extension HTTP2PoolMachine {
    /// The connection reports room: the server's SETTINGS arrived (it is
    /// ready), or a stream closed, or the window grew.
    mutating func connectionCanTakeMore(_ connection: ConnectionID, now: UInt64, connections view: some HTTP2PoolConnections,
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
                                          connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
        if case .submitting = state { impossible("connectionAttemptFailed") }
        connections.removeAll { $0 == connection }
        consecutiveFailures += 1
        backoffUntil = now &+ Backoff(base: limits.backoffBase, cap: limits.backoffCap)
            .delay(afterFailures: consecutiveFailures, random: &random)
        if !hasLiveConnection(view) { failWaiting(failure.failureOfWaitingRequest, into: &actions) }
        connectionGone(into: &actions)
    }

    /// A connection closed after it was ready, lost or in order. Its requests
    /// were finished or handed back before this.
    mutating func connectionClosed(_ connection: ConnectionID, into actions: inout [Action]) {
        if case .submitting = state { impossible("connectionClosed") }
        connections.removeAll { $0 == connection }
        connectionGone(into: &actions)
    }

    mutating func connectionGone(into actions: inout [Action]) {
        if case .shuttingDown = state {
            failWaiting(.allConnectionsDown, into: &actions)
            checkShutdownDone(into: &actions)
        } else {
            scheduleDispatch(into: &actions)
        }
    }

    mutating func backoffTimerFired(now: UInt64, connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
        switch state {
        case .running:
            backoffTimerArmed = false
            openConnectionIfNeeded(now: now, view, into: &actions)
        case .shuttingDown, .submitting:
            // Shutdown cancels it (a cancelled loop timer never runs).
            impossible("backoffTimerFired")
        }
    }

    func hasLiveConnection(_ view: some HTTP2PoolConnections) -> Bool {
        for position in connections.indices where view.state(of: connections[position], at: position) < .draining {
            return true
        }
        return false
    }
}
