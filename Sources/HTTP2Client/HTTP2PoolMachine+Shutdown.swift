// The pool machine's shutdown: send what fits, fail what waits, drain every
// connection, then report done.

extension HTTP2PoolMachine {
    /// Sends what fits, fails what still waits, drains every connection (open
    /// streams finish, bounded by the answer timeout), then `shutdownDone`.
    /// Again while under way: `shutdownDone` once more when it is over.
    mutating func shutdown(now: UInt64, connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
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

    mutating func beginShutdown(into actions: inout [Action]) {
        state = .shuttingDown(doneAwaited: true)
        if backoffTimerArmed {
            backoffTimerArmed = false
            actions.append(.cancelBackoffTimer)
        }
        failWaiting(.allConnectionsDown, into: &actions)
        for connection in connections { actions.append(.drainConnection(connection)) }
        checkShutdownDone(into: &actions)
    }

    mutating func checkShutdownDone(into actions: inout [Action]) {
        guard case .shuttingDown(doneAwaited: true) = state, connections.isEmpty, inFlightCount == 0 else { return }
        state = .shuttingDown(doneAwaited: false)
        // Nothing is left to time out (every request has completed).
        if deadlineTimerArmed {
            deadlineTimerArmed = false
            actions.append(.cancelDeadlineTimer)
        }
        actions.append(.shutdownDone)
    }
}
