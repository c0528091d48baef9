// A request's way through the pool machine: sent or queued, submitted,
// answered, handed back or timed out, then completed.

extension HTTP2PoolMachine {
    // MARK: Sending

    mutating func send(_ request: PooledRequest, now: UInt64, connections view: some HTTP2PoolConnections,
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
    mutating func queueOrRefuse(_ request: PooledRequest, now: UInt64, _ view: some HTTP2PoolConnections,
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
    mutating func submitted(streamID: Int32, connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
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
    mutating func submitRefused(connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
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

    /// HTTP/2 cannot carry the request (a header it forbids): the server never saw
    /// it, and no other connection would take it.
    mutating func submitUnsendable(_ reason: String, connections view: some HTTP2PoolConnections,
                                   into actions: inout [Action]) {
        guard case .submitting(let request, _, let origin, let now) = state else { impossible("submitUnsendable") }
        state = .running
        let failure = RequestFailure.streamFailed("request not sendable over HTTP/2: \(reason)")
        switch origin {
        case .send:
            actions.append(.completeOnNextPass(finishedNow(request), failure))
        case .dispatch(let next):
            complete(request, .failed(failure), into: &actions)
            dispatchNext(then: next, now: now, view, into: &actions)
        }
    }

    // MARK: Answers

    /// The connection finished the request: the server's answer or a stream failure.
    mutating func requestFinished(_ request: PooledRequest, with answer: PooledAnswer,
                                  connections view: some HTTP2PoolConnections, into actions: inout [Action]) {
        if case .submitting = state { impossible("requestFinished") }
        // Late: the answer timeout completed it already.
        guard !request.isCompleted else { return }
        inFlightCount -= 1
        // The status decides first: on the 2xx path the request is not asked.
        if case .answered(let status) = answer, !(200..<300).contains(status),
           follow(request.policy(afterAnswer: status), of: request, view, into: &actions) {
            return
        }
        complete(request, answer, into: &actions)
    }

    /// What the request's policy decided of an error answer: the
    /// authorizer hears of a refused credential, a connection bound to the
    /// wrong credential drains; true when the request goes again (each time
    /// counts against `maxResends`).
    mutating func follow(_ policy: AnswerPolicy, of request: PooledRequest,
                         _ view: some HTTP2PoolConnections, into actions: inout [Action]) -> Bool {
        guard policy != .complete, case .inFlight(let connection, _) = request.phase else { return false }
        if let refusal = policy.refusal, let stamp = request.authorizationStamp {
            actions.append(.credentialRefused(refusal, stamp: stamp))
        }
        switch policy.resend {
        case .no:
            return false
        case .anyConnection:
            break
        case .anotherConnection:
            // Whatever becomes of this request, nothing more goes there.
            if connections.contains(connection), view.state(of: connection) < .draining {
                actions.append(.drainConnection(connection))
            }
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
    mutating func requestsReturnedUnprocessed(_ requests: [PooledRequest], into actions: inout [Action]) {
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
                let detail = shuttingDown ? "refused by the server during shutdown" : "refused by the server \(request.resendCount) times"
                complete(request, .failed(.streamFailed(detail)), into: &actions)
                continue
            }
            request.phase = .queued
            resends.append(request)
            waitingCount += 1
        }
        scheduleDispatch(into: &actions)
    }

    // MARK: Answer deadlines

    mutating func trackAnswerDeadline(_ request: PooledRequest, now: UInt64, into actions: inout [Action]) {
        // Measured from `send`: the relay must answer before Mastodon gives up.
        let (deadline, overflow) = now.addingReportingOverflow(limits.answerTimeout)
        request.answerDeadline = overflow ? .max : deadline
        deadlines.append(request)
        armDeadlineTimerIfNeeded(into: &actions)
    }

    mutating func armDeadlineTimerIfNeeded(into actions: inout [Action]) {
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

    mutating func answerTimedOut(_ request: PooledRequest, into actions: inout [Action]) {
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
        complete(request, .failed(.answerTimedOut), into: &actions)
    }

    // MARK: Completions

    mutating func complete(_ request: PooledRequest, _ answer: PooledAnswer, into actions: inout [Action]) {
        guard !request.isCompleted else { return }
        deadlines.remove(request)
        actions.append(.complete(finishedNow(request), answer))
    }

    /// Marks a request completed (its completion is decided).
    func finishedNow(_ request: PooledRequest) -> PooledRequest {
        request.isCompleted = true
        request.phase = .finished
        return request
    }

    mutating func failWaiting(_ failure: RequestFailure, into actions: inout [Action]) {
        while let request = resends.popFirst() ?? waiting.popFirst() {
            waitingCount -= 1
            complete(request, .failed(failure), into: &actions)
        }
    }
}
