/// The lifecycle of one sender connection (HTTP/1.1, RFC 9112), without I/O.
///
/// reading head → reading body → awaiting the answer → writing → idle
/// (keep-alive) or closed. The connection handler feeds it events (bytes
/// available, answer ready, write completed, timer fired, peer closed,
/// shutdown) and carries out the actions it appends, in order. An event the
/// connection cannot send in a state stops the process (preconditionFailure
/// naming both); a late one that can happen (a stale timer, a second EOF)
/// is a named no-op.
///
/// Pipelined requests are answered in order by handling one request at a
/// time: bytes of the next request wait in the input buffer until the answer
/// to the current one is written, and each request gets its own header timer.
///
/// Each event appends its actions to a caller-owned array (`into:`), which
/// the connection reuses: a fresh array per event cost two or three
/// allocations per request.
public struct HTTP1ConnectionMachine: Sendable {
    /// How long each phase may take (WIRE.md §5; the relay's
    /// `Configuration` reads its defaults from here).
    public struct Timeouts: Sendable, Equatable {
        /// From the connection's start (or a later request's first byte) to
        /// the end of the head: beyond, 408.
        public var header: Duration
        /// From the end of the head to the end of the body: beyond, 408.
        /// Also how long a peer that stops reading gets to take an answer.
        public var body: Duration
        /// An idle connection between requests: beyond, a silent close.
        public var keepAlive: Duration
        /// Once shutdown begins, how long an idle keep-alive connection still
        /// takes a request (answered with `Connection: close`) before it
        /// closes silently: a sender that is sending on it moves to a new
        /// connection, which waits in the backlog for the next process,
        /// instead of having its request closed under it (a sender learns of
        /// a close only when it writes). At most `keepAlive`.
        public var lastCall: Duration

        public init(header: Duration = .seconds(10), body: Duration = .seconds(10),
                    keepAlive: Duration = .seconds(75), lastCall: Duration = .seconds(1)) {
            self.header = header
            self.body = body
            self.keepAlive = keepAlive
            self.lastCall = lastCall
        }
    }

    public enum TimerKind: Sendable, Equatable {
        case header, body, keepAlive
    }

    /// Where the connection is. What a state must remember travels with it
    /// (as in async-http-client's state machines): nothing beside the state
    /// can disagree with it. The payloads are a few bytes, stored inline.
    public enum State: Sendable, Equatable {
        /// Between requests (or before the first): nothing of a request yet.
        case idle
        /// Between requests once shutdown began: a request that arrives
        /// within `Timeouts.lastCall` is answered with `Connection: close`;
        /// none, and the connection closes silently.
        case lastCall
        case readingHead(HeadProgress)
        case readingBody(BodyProgress)
        /// The request went to the handler; its answer is pending.
        case awaitingResponse(DispatchedRequest)
        /// A response is queued and not yet fully written.
        case writing(then: AfterWrite)
        /// `afterResponse`: the connection closes because a response said
        /// `Connection: close` (rather than idling out or losing its peer):
        /// the peer may still be sending, so the closer should linger
        /// (RFC 9112 §9.6).
        case closed(afterResponse: Bool)
    }

    /// A request whose head is still arriving.
    public struct HeadProgress: Sendable, Equatable {
        /// A graceful shutdown began: the answer says `Connection: close`.
        var shuttingDown = false
    }

    /// A request whose head is complete and whose body is still arriving.
    public struct BodyProgress: Sendable, Equatable {
        var continueSent = false
        var shuttingDown = false
    }

    /// What the answer to the dispatched request must know of it.
    public struct DispatchedRequest: Sendable, Equatable {
        var version: HTTPVersion
        var keepAlive: Bool
        var isHead: Bool
        /// The peer has sent EOF (it may have shut down only its sending half).
        var peerClosed = false
        var shuttingDown = false
    }

    /// What follows once the queued response is written.
    public enum AfterWrite: Sendable, Equatable {
        /// Wait for the next request (or read the pipelined one).
        case keepAlive
        /// The peer sent EOF after pipelining: answer the complete requests
        /// already buffered, then close.
        case answerBufferedThenClose
        case close
    }

    public enum Action: Sendable, Equatable {
        /// Queue bytes for the peer.
        case send([UInt8])
        /// Drop this many bytes from the front of the input buffer.
        case consume(Int)
        /// Hand the request to the handler; call `responseReady` with its answer.
        case dispatch(HTTP1Request)
        /// Arm the connection's one timer (replacing any armed one).
        case armTimer(TimerKind, Duration)
        case cancelTimer
        /// Close the connection (after what was sent has been written).
        case close
        /// The request was refused before reaching the handler (framing,
        /// limits, timeouts): for the log.
        case refused(status: Int, reason: String)
    }

    public private(set) var state = State.idle
    public let timeouts: Timeouts
    private var parser: HTTP1RequestParser
    /// Requests fully answered on this connection.
    public private(set) var requestsServed = 0

    /// How refusals are worded: the listener's handler decides.
    private let refusals: HTTP1Refusals

    public init(limits: HTTP1Limits, timeouts: Timeouts, refusals: HTTP1Refusals = .plainText) {
        parser = HTTP1RequestParser(limits: limits)
        self.timeouts = timeouts
        self.refusals = refusals
    }

    /// True while the connection should read and parse what the peer sends.
    public var wantsInput: Bool {
        switch state {
        case .idle, .lastCall, .readingHead, .readingBody: true
        case .awaitingResponse, .writing, .closed: false
        }
    }

    public var isIdle: Bool { state == .idle }

    /// A response (or a refusal) is queued and not yet fully written.
    public var isWriting: Bool {
        if case .writing = state { true } else { false }
    }

    /// See `State.closed(afterResponse:)`.
    public var closedAfterResponse: Bool { state == .closed(afterResponse: true) }

    /// A new connection: the first request's head must arrive within the
    /// header timeout.
    public mutating func start(into actions: inout [Action]) {
        actions.append(.armTimer(.header, timeouts.header))
    }

    /// Everything buffered and not yet consumed, from the first byte of the
    /// current request.
    public mutating func bytesAvailable(_ buffer: UnsafeRawBufferPointer, into actions: inout [Action]) {
        let head: HeadProgress
        var body: BodyProgress?
        switch state {
        case .idle, .lastCall:
            guard !buffer.isEmpty else { return }
            head = HeadProgress(shuttingDown: state == .lastCall)
            // The keep-alive (or last-call) timer gives way to this request's
            // header timer; the first request's header timer has run since `start`.
            if requestsServed > 0 { actions.append(.armTimer(.header, timeouts.header)) }
        case .readingHead(let progress):
            head = progress
        case .readingBody(let progress):
            head = HeadProgress()
            body = progress
        case .awaitingResponse, .writing, .closed:
            // Bytes of a pipelined request wait in the buffer until the
            // current answer is written (the connection does not offer them:
            // `wantsInput` is false).
            return
        }
        switch parser.parse(buffer) {
        case .incomplete(let headComplete, let expectsContinue):
            // The parser says where the head ended: from then on the body
            // timer runs instead of the header timer.
            if body == nil && headComplete {
                body = BodyProgress(shuttingDown: head.shuttingDown)
                actions.append(.armTimer(.body, timeouts.body))
            }
            if var progress = body {
                // Only a complete head expects 100-continue.
                if expectsContinue && !progress.continueSent {
                    progress.continueSent = true
                    actions.append(.send(HTTP1Response.continue100))
                }
                state = .readingBody(progress)
            } else {
                state = .readingHead(head)
            }
        case .complete(let request, let consumed):
            state = .awaitingResponse(DispatchedRequest(
                version: request.version, keepAlive: request.keepAlive, isHead: request.method == "HEAD",
                shuttingDown: body?.shuttingDown ?? head.shuttingDown))
            actions.append(.consume(consumed))
            actions.append(.cancelTimer)
            actions.append(.dispatch(request))
        case .invalid(let error):
            actions.append(.cancelTimer)
            refuse(status: error.status, reason: error.reason, into: &actions)
        }
    }

    /// The handler's answer to the dispatched request. `hasBufferedInput`:
    /// bytes of a later (pipelined) request are already buffered, so a peer
    /// that has half-closed still gets answers to them.
    public mutating func responseReady(_ response: HTTP1Response, hasBufferedInput: Bool = false,
                                       into actions: inout [Action]) {
        guard case .awaitingResponse(let pending) = state else {
            // The handler answers each dispatched request exactly once, and
            // the connection stops passing answers on once it is closed.
            preconditionFailure("HTTP1ConnectionMachine: responseReady in state \(state)")
        }
        let closing = response.closesConnection || !pending.keepAlive || pending.shuttingDown
            || (pending.peerClosed && !hasBufferedInput)
        state = .writing(then: closing ? .close : pending.peerClosed ? .answerBufferedThenClose : .keepAlive)
        // A fresh buffer per response, on purpose: one kept per connection
        // saves the allocation but is cold in the cache by the time of the
        // next answer, and the misses cost more (perf: +0.25 µs/request).
        actions.append(
            .send(response.serialize(closing: closing, requestVersion: pending.version, includeBody: !pending.isHead)))
    }

    /// Everything queued has been written. `buffered` is the unconsumed input
    /// (a pipelined request may already be there).
    public mutating func writeCompleted(buffered: UnsafeRawBufferPointer, into actions: inout [Action]) {
        let next: AfterWrite
        switch state {
        case .writing(let then):
            next = then
        case .idle, .lastCall, .readingHead, .readingBody, .awaitingResponse, .closed:
            // Not a response's end: an interim `100 Continue` went out while
            // the request is read or answered, or output queued before the
            // close finished. Nothing changes.
            return
        }
        switch next {
        case .close:
            state = .closed(afterResponse: true)
            actions.append(.close)
        case .answerBufferedThenClose:
            requestsServed += 1
            state = .idle
            // Answer what the peer sent before its EOF, then close: a
            // request still incomplete can never be completed.
            bytesAvailable(buffered, into: &actions)
            switch state {
            case .awaitingResponse(var pending):
                pending.peerClosed = true
                state = .awaitingResponse(pending)
            case .idle, .lastCall, .readingHead, .readingBody:
                state = .closed(afterResponse: false)
                actions.append(.cancelTimer)
                actions.append(.close)
            case .writing, .closed:
                break  // a refusal of the buffered bytes is being written
            }
        case .keepAlive:
            requestsServed += 1
            state = .idle
            if buffered.isEmpty {
                actions.append(.armTimer(.keepAlive, timeouts.keepAlive))
            } else {
                bytesAvailable(buffered, into: &actions)
            }
        }
    }

    public mutating func timerFired(_ kind: TimerKind, into actions: inout [Action]) {
        switch (state, kind) {
        case (.idle, .keepAlive), (.lastCall, .keepAlive):
            // An idle keep-alive connection closes silently: a 408 nobody
            // asked for would be read as the answer to the sender's next
            // request (RFC 9112 §9.5 allows closing idle connections).
            state = .closed(afterResponse: false)
            actions.append(.close)
        case (.idle, .header), (.readingHead, .header):
            timedOut("request head not received in time", into: &actions)
        case (.readingBody, .body), (.readingBody, .header):
            timedOut("request body not received in time", into: &actions)
        case (.idle, .body), (.lastCall, .header), (.lastCall, .body), (.readingHead, .body), (.readingHead, .keepAlive),
             (.readingBody, .keepAlive),
             (.awaitingResponse, _), (.writing, _), (.closed, _):
            // A timer of an earlier phase, cancelled lazily by the connection,
            // firing late: the current phase has its own (or none).
            break
        }
    }

    /// The peer closed its side (EOF). A request already read still gets
    /// its answer (the peer may only have shut down its sending half).
    public mutating func peerClosed(into actions: inout [Action]) {
        switch state {
        case .idle, .lastCall, .readingHead, .readingBody:
            state = .closed(afterResponse: false)
            actions.append(.cancelTimer)
            actions.append(.close)
        case .awaitingResponse(var pending):
            pending.peerClosed = true
            state = .awaitingResponse(pending)
        case .writing:
            state = .writing(then: .close)
        case .closed:
            // EOF reported again (epoll keeps reporting a hang-up), or after
            // the close: nothing left to do.
            break
        }
    }

    /// Graceful shutdown: a request being read or answered finishes, and
    /// its response says `Connection: close`. So does the first request of
    /// a connection that has sent none yet: it was accepted from the
    /// backlog, so its sender has sent or is sending a request, and closing
    /// would reset a request nobody else will answer (its header timer
    /// still bounds the wait). An idle keep-alive connection takes a
    /// request for `Timeouts.lastCall` more, then closes.
    public mutating func shutdown(into actions: inout [Action]) {
        switch state {
        case .idle where requestsServed == 0:
            state = .readingHead(HeadProgress(shuttingDown: true))
        case .idle:
            state = .lastCall
            actions.append(.armTimer(.keepAlive, min(timeouts.lastCall, timeouts.keepAlive)))
        case .lastCall:
            break  // asked again
        case .readingHead(var progress):
            progress.shuttingDown = true
            state = .readingHead(progress)
        case .readingBody(var progress):
            progress.shuttingDown = true
            state = .readingBody(progress)
        case .awaitingResponse(var pending):
            pending.shuttingDown = true
            state = .awaitingResponse(pending)
        case .writing:
            state = .writing(then: .close)
        case .closed:
            break  // asked again, or the connection closed meanwhile
        }
    }

    /// A refusal: answer `status` with a one-line reason in the listener's
    /// dialect, then close (the parser cannot find the next request's start
    /// after a framing error). `Connection: close` makes the request's
    /// version irrelevant.
    /// A request that did not arrive in time: 408, or a close without an
    /// answer where the listener's refusals say so (still logged as a 408).
    private mutating func timedOut(_ reason: String, into actions: inout [Action]) {
        guard refusals.answersTimeouts else {
            state = .closed(afterResponse: false)
            actions.append(.refused(status: 408, reason: reason + ": closed without an answer"))
            actions.append(.close)
            return
        }
        refuse(status: 408, reason: reason, into: &actions)
    }

    private mutating func refuse(status: Int, reason: String, into actions: inout [Action]) {
        state = .writing(then: .close)
        let response = refusals.response(status: status, reason: reason)
        actions.append(.refused(status: status, reason: reason))
        actions.append(.send(response.serialize(closing: true)))
    }
}
