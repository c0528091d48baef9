import RelayCore

/// The lifecycle of one sender connection (HTTP/1.1, RFC 9112), without I/O.
///
/// reading head → reading body → awaiting the answer → writing → idle
/// (keep-alive) or closed. The connection handler feeds it events (bytes
/// available, answer ready, write drained, timer fired, peer closed,
/// shutdown) and carries out the actions it returns, in order.
///
/// Pipelined requests are answered in order by handling one request at a
/// time: bytes of the next request wait in the input buffer until the answer
/// to the current one is written, and each request gets its own header timer.
///
/// Each event appends its actions to a caller-owned array (`into:`), which
/// the connection reuses: a fresh array per event cost two or three
/// allocations per request. The forms returning an array are for tests.
public struct HTTP1ConnectionMachine: Sendable {
    public struct Timeouts: Sendable, Equatable {
        public var header: Duration
        public var body: Duration
        public var keepAlive: Duration

        public init(header: Duration = .seconds(10), body: Duration = .seconds(10), keepAlive: Duration = .seconds(75)) {
            self.header = header
            self.body = body
            self.keepAlive = keepAlive
        }
    }

    public enum TimerKind: Sendable, Equatable {
        case header, body, keepAlive
    }

    public enum State: Sendable, Equatable {
        /// Between requests (or before the first): nothing of a request yet.
        case idle
        case readingHead
        case readingBody
        /// The request went to the relay; its answer is pending.
        case awaitingResponse
        /// A response is queued and not yet fully written.
        case writing
        case closed
    }

    public enum Action: Sendable, Equatable {
        /// Queue bytes for the peer.
        case send([UInt8])
        /// Drop this many bytes from the front of the input buffer.
        case consume(Int)
        /// Hand the request to the relay; call `responseReady` with its answer.
        case dispatch(HTTP1Request)
        /// Arm the connection's one timer (replacing any armed one).
        case armTimer(TimerKind, Duration)
        case cancelTimer
        /// Close the connection (after what was sent has been written).
        case close
        /// The request was refused before reaching the relay (framing,
        /// limits, timeouts): for the log.
        case refused(status: Int, reason: String)
    }

    public private(set) var state = State.idle
    public let timeouts: Timeouts
    private var parser: HTTP1RequestParser
    /// Requests fully answered on this connection.
    public private(set) var requestsServed = 0
    private var continueSent = false
    /// Where the search for the end of the head resumes (see `headEnds`).
    private var headScanOffset = 0
    private var headScanStarted = false
    private var pendingVersion = HTTPVersion.http1_1
    private var pendingKeepAlive = true
    private var pendingIsHead = false
    private var closeAfterWrite = false
    private var peerHasClosed = false
    private var shuttingDown = false
    /// The connection closes because a response said `Connection: close`
    /// (rather than idling out or losing its peer): the peer may still be
    /// sending, so the closer should linger (RFC 9112 §9.6).
    public private(set) var closedAfterResponse = false

    public init(limits: HTTP1Limits, timeouts: Timeouts) {
        parser = HTTP1RequestParser(limits: limits)
        self.timeouts = timeouts
    }

    /// True while the connection should read and parse what the peer sends.
    public var wantsInput: Bool {
        state == .idle || state == .readingHead || state == .readingBody
    }

    /// A new connection: the first request's head must arrive within the
    /// header timeout.
    public mutating func start(into actions: inout [Action]) {
        actions.append(.armTimer(.header, timeouts.header))
    }

    /// Everything buffered and not yet consumed, from the first byte of the
    /// current request.
    public mutating func bytesAvailable(_ buffer: UnsafeRawBufferPointer, into actions: inout [Action]) {
        switch state {
        case .idle:
            guard !buffer.isEmpty else { return }
            state = .readingHead
            headScanOffset = 0
            headScanStarted = false
            // The keep-alive timer gives way to this request's header timer;
            // the first request's header timer has run since `start`.
            if requestsServed > 0 { actions.append(.armTimer(.header, timeouts.header)) }
        case .readingHead, .readingBody:
            break
        case .awaitingResponse, .writing, .closed:
            return
        }
        switch parser.parse(buffer) {
        case .incomplete(let expectsContinue):
            if state == .readingHead && headEnds(in: buffer) {
                state = .readingBody
                actions.append(.armTimer(.body, timeouts.body))
            }
            if expectsContinue && !continueSent {
                continueSent = true
                actions.append(.send(HTTP1Response.continue100))
            }
        case .complete(let request, let consumed):
            state = .awaitingResponse
            continueSent = false
            pendingVersion = request.version
            pendingKeepAlive = request.keepAlive
            pendingIsHead = request.method == "HEAD"
            actions.append(.consume(consumed))
            actions.append(.cancelTimer)
            actions.append(.dispatch(request))
        case .invalid(let error):
            actions.append(.cancelTimer)
            fail(status: error.status, reason: error.reason, into: &actions)
        }
    }

    /// The relay's answer to the dispatched request. `hasBufferedInput`:
    /// bytes of a later (pipelined) request are already buffered, so a peer
    /// that has half-closed still gets answers to them.
    public mutating func responseReady(_ response: HTTP1Response, hasBufferedInput: Bool = false,
                                       into actions: inout [Action]) {
        guard state == .awaitingResponse else { return }
        let closing = !pendingKeepAlive || shuttingDown || (peerHasClosed && !hasBufferedInput)
        state = .writing
        closeAfterWrite = closing
        // A fresh buffer per response, on purpose: one kept per connection
        // saved the allocation but was cold in the cache by the time of the
        // next answer, and the misses cost more (perf: +0.25 µs/request).
        actions.append(
            .send(response.serialize(closing: closing, requestVersion: pendingVersion, includeBody: !pendingIsHead)))
    }

    /// Everything queued has been written. `buffered` is the unconsumed input
    /// (a pipelined request may already be there).
    public mutating func writeDrained(buffered: UnsafeRawBufferPointer, into actions: inout [Action]) {
        guard state == .writing else { return }
        if closeAfterWrite {
            state = .closed
            closedAfterResponse = true
            actions.append(.close)
            return
        }
        requestsServed += 1
        state = .idle
        if peerHasClosed {
            // Answer what the peer sent before its EOF, then close: a
            // request still incomplete can never be completed.
            bytesAvailable(buffered, into: &actions)
            if wantsInput {
                state = .closed
                actions.append(.cancelTimer)
                actions.append(.close)
            }
            return
        }
        if buffered.isEmpty {
            actions.append(.armTimer(.keepAlive, timeouts.keepAlive))
            return
        }
        bytesAvailable(buffered, into: &actions)
    }

    public mutating func timerFired(_ kind: TimerKind, into actions: inout [Action]) {
        switch (state, kind) {
        case (.idle, .keepAlive):
            // An idle keep-alive connection closes silently: a 408 nobody
            // asked for would be read as the answer to the sender's next
            // request (RFC 9112 §9.5 allows closing idle connections).
            state = .closed
            actions.append(.close)
        case (.idle, .header), (.readingHead, .header):
            fail(status: 408, reason: "request head not received in time", into: &actions)
        case (.readingBody, .body), (.readingBody, .header):
            fail(status: 408, reason: "request body not received in time", into: &actions)
        default:
            break  // stale
        }
    }

    /// The peer closed its side (EOF). A request already read still gets
    /// its answer (the peer may only have shut down its sending half).
    public mutating func peerClosed(into actions: inout [Action]) {
        peerHasClosed = true
        switch state {
        case .idle, .readingHead, .readingBody:
            state = .closed
            actions.append(.cancelTimer)
            actions.append(.close)
        case .awaitingResponse, .closed:
            break
        case .writing:
            closeAfterWrite = true
        }
    }

    /// Graceful shutdown: idle connections close now; a request being read
    /// or answered finishes, and its response says `Connection: close`.
    public mutating func shutdown(into actions: inout [Action]) {
        shuttingDown = true
        switch state {
        case .idle:
            state = .closed
            actions.append(.cancelTimer)
            actions.append(.close)
        case .writing:
            closeAfterWrite = true
        case .readingHead, .readingBody, .awaitingResponse, .closed:
            break
        }
    }

    // MARK: the same events, each returning a fresh array (tests)

    public mutating func start() -> [Action] { collect { $0.start(into: &$1) } }

    public mutating func bytesAvailable(_ buffer: UnsafeRawBufferPointer) -> [Action] {
        collect { $0.bytesAvailable(buffer, into: &$1) }
    }

    public mutating func responseReady(_ response: HTTP1Response, hasBufferedInput: Bool = false) -> [Action] {
        collect { $0.responseReady(response, hasBufferedInput: hasBufferedInput, into: &$1) }
    }

    public mutating func writeDrained(buffered: UnsafeRawBufferPointer) -> [Action] {
        collect { $0.writeDrained(buffered: buffered, into: &$1) }
    }

    public mutating func timerFired(_ kind: TimerKind) -> [Action] { collect { $0.timerFired(kind, into: &$1) } }

    public mutating func peerClosed() -> [Action] { collect { $0.peerClosed(into: &$1) } }

    public mutating func shutdown() -> [Action] { collect { $0.shutdown(into: &$1) } }

    private mutating func collect(_ event: (inout Self, inout [Action]) -> Void) -> [Action] {
        var actions: [Action] = []
        event(&self, &actions)
        return actions
    }

    /// A refusal: answer `status` with a one-line reason, then close (the
    /// parser cannot find the next request's start after a framing error).
    private mutating func fail(status: Int, reason: String, into actions: inout [Action]) {
        state = .writing
        closeAfterWrite = true
        pendingIsHead = false
        let response = HTTP1Response(
            status: status, headers: [HTTPField(name: "Content-Type", value: "text/plain; charset=utf-8")],
            body: reason + "\n")
        actions.append(.refused(status: status, reason: reason))
        actions.append(.send(response.serialize(closing: true, requestVersion: pendingVersion)))
    }

    /// Whether the head (request line and fields) is complete in `buffer`:
    /// an empty line after the request line. The parser keeps that to itself;
    /// this only decides which timer runs, so the scan is simple: find LF
    /// followed by LF or CR LF, after skipping the empty lines RFC 9112 §2.2
    /// lets a sender put before the request line.
    private mutating func headEnds(in buffer: UnsafeRawBufferPointer) -> Bool {
        let count = buffer.count
        var index = headScanOffset
        if !headScanStarted {
            while index < count && (buffer[index] == 0x0D || buffer[index] == 0x0A) { index += 1 }
            guard index < count else { return false }
            headScanStarted = true
        }
        while index < count {
            if buffer[index] == 0x0A {
                if index + 1 < count && buffer[index + 1] == 0x0A { return true }
                if index + 2 < count && buffer[index + 1] == 0x0D && buffer[index + 2] == 0x0A { return true }
                if index + 2 >= count {
                    // The LF might start the terminator: look again from here.
                    headScanOffset = index
                    return false
                }
            }
            index += 1
        }
        headScanOffset = index
        return false
    }
}
