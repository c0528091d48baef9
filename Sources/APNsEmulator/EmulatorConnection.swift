import EventLoop
import HTTP2
import HTTP2Transport
import TLS

/// One client connection: TLS handshake, then HTTP/2 through
/// `HTTP2ServerSession`, with the per-connection GOAWAY/drop behaviours.
final class EmulatorConnection: IOHandler, HTTP2ServerSessionDelegate {
    /// Where the connection is. `serving`, `goingAway` and `dropping` are
    /// open (bytes still move both ways); they differ in what a new request
    /// gets.
    private enum Phase: Equatable {
        case handshaking
        case serving
        /// Our GOAWAY announced `lastStreamID`: later streams are refused
        /// (RFC 9113 §8.7); the connection closes, gracefully, once no
        /// stream is left.
        case goingAway(lastStreamID: Int32)
        /// A fault drops the connection once the answers already queued are
        /// written; requests read meanwhile get nothing. A GOAWAY sent
        /// before is remembered (with no stream left, that flush closes
        /// gracefully first).
        case dropping(goAwayLastStreamID: Int32?)
        case closed

        var isOpen: Bool {
            switch self {
            case .serving, .goingAway, .dropping: true
            case .handshaking, .closed: false
            }
        }

        /// New requests are read and answered (or refused above GOAWAY's
        /// last-stream-id).
        var takesRequests: Bool {
            switch self {
            case .serving, .goingAway: true
            case .handshaking, .dropping, .closed: false
            }
        }

        var goAwayLastStreamID: Int32? {
            switch self {
            case .goingAway(let lastStreamID): lastStreamID
            case .dropping(let lastStreamID): lastStreamID
            case .handshaking, .serving, .closed: nil
            }
        }
    }

    private static let handshakeTimeout: Duration = .seconds(10)
    /// After our GOAWAY, the answers still owed get this long.
    private static let drainTimeout: Duration = .seconds(10)
    /// TLS reads per readiness event, for fairness between connections.
    private static let readsPerPass = 32

    private unowned let worker: EmulatorWorker
    let id: Int
    private let socket: Socket
    private let fd: Int32
    private let tls: TLSConnection
    private var session: HTTP2ServerSession?
    private var phase = Phase.handshaking
    private var credential = ClientCredential.none
    /// The key of the first provider token taken here: APNs binds the
    /// connection to it (a token of another key: 403 UnrelatedKeyIdInToken).
    private var boundKey: EmulatorTokenKey?
    /// Answers on their way to the client; reading stops while 1 MiB of
    /// them waits for the peer.
    private var pump = HTTP2TLSPump(highWater: 1 << 20, keptCapacity: 1 << 20)
    private var writeBlocked = false
    private var requestCount = 0
    private var raiseLimitOnFirstRequest = false
    private var timer: TimerID?
    /// Zero-delay passes scheduled and not yet run (`ZeroDelayPassHost`).
    var scheduledPasses: ZeroDelayPasses = []
    /// Answers held for the response delay, in due order (the delay is one
    /// value for every request, so a FIFO with one loop timer replaces a
    /// timer, a closure and a flush per answer).
    private var delayedAnswers = FIFO<DelayedAnswer>()
    /// Due time of the answer appended last to `delayedAnswers`.
    private var latestDue: UInt64 = 0
    private var delayTimer: TimerID?

    private struct DelayedAnswer {
        let due: UInt64
        let streamID: Int32
        let status: Int
        let headers: [(name: String, value: String)]
        let body: [UInt8]
    }

    init(worker: EmulatorWorker, socket: Socket, id: Int) throws(TLSError) {
        self.worker = worker
        self.socket = socket
        self.id = id
        fd = socket.fileDescriptor
        tls = try TLSConnection(context: worker.state.tlsContext, fd: socket.fileDescriptor, serverName: nil)
    }

    func start() {
        do {
            try worker.loop.register(fd, interest: .readable, handler: self)
        } catch {
            close(graceful: false)
            return
        }
        timer = worker.loop.schedule(after: Self.handshakeTimeout) { [weak self] in
            guard let self, self.phase == .handshaking else { return }
            self.timer = nil
            self.worker.state.handshakeFailures.wrappingAdd(1, ordering: .relaxed)
            self.worker.state.log("connection \(self.id): handshake timed out")
            self.close(graceful: false)
        }
    }

    func handleIO(_ events: IOEvents) {
        switch phase {
        case .closed:
            return
        case .handshaking:
            continueHandshake()
        case .serving, .goingAway, .dropping:
            if events.contains(.error) {
                close(graceful: false)
                return
            }
            if events.contains(.writable) { flush() }
            if phase.isOpen, !events.isDisjoint(with: [.readable, .hangup]) { readAvailable() }
        }
    }

    // MARK: handshake

    private func continueHandshake() {
        switch tls.handshake() {
        case .complete:
            if let timer { worker.loop.cancel(timer) }
            timer = nil
            guard tls.negotiatedALPN == "h2" else {
                worker.state.handshakeFailures.wrappingAdd(1, ordering: .relaxed)
                worker.state.log("connection \(id): client did not negotiate h2")
                close(graceful: true)
                return
            }
            credential = worker.credential(for: tls)
            let behavior = worker.behavior
            raiseLimitOnFirstRequest = behavior.initialMaxConcurrentStreams != nil
            do {
                session = try HTTP2ServerSession(
                    delegate: self, maxConcurrentStreams: behavior.initialMaxConcurrentStreams ?? behavior.maxConcurrentStreams,
                    connectionWindowSize: behavior.connectionWindowSize)
            } catch {
                worker.state.log("connection \(id): \(error)")
                close(graceful: true)
                return
            }
            phase = .serving
            readAvailable()
        case .wantRead:
            worker.loop.setInterest(fd, .readable)
        case .wantWrite:
            worker.loop.setInterest(fd, .writable)
        case .closed, .failed:
            worker.state.handshakeFailures.wrappingAdd(1, ordering: .relaxed)
            worker.state.log("connection \(id): TLS handshake failed")
            close(graceful: false)
        }
    }

    // MARK: bytes in, bytes out

    private func readAvailable() {
        guard let session else { return }
        let pass = HTTP2TLSPump.readAndFeed(session, from: tls, into: worker.readBuffer, maxReads: Self.readsPerPass,
                                            host: self)
        switch pass.stop {
        case .wantRead, .stoppedByHost:
            break
        case .yielded(let moreBuffered):
            // Data already inside OpenSSL raises no epoll event.
            if moreBuffered { scheduleZeroDelayPass(.readContinuation, on: worker.loop) }
        case .wantWrite:
            writeBlocked = true
        case .protocolError(let error):
            worker.state.log("connection \(id): \(error)")
            flush()
            close(graceful: false)
            return
        case .closed:
            flush()
            close(graceful: false)
            return
        case .failed(let error):
            worker.state.log("connection \(id): \(error)")
            close(graceful: false)
            return
        }
        if case .dropping = phase {
            // Answers already queued for earlier requests go out first, so
            // the client is not made to resend what was accepted.
            flush()
            close(graceful: false)
            return
        }
        flush()
    }

    private func holdAnswer(_ answer: DelayedAnswer) {
        if !delayedAnswers.isEmpty, answer.due < latestDue {
            // The delay was shortened while answers wait: this one must not
            // queue behind them.
            worker.loop.schedule(atNanoseconds: answer.due) { [weak self] in
                guard let self, self.phase.isOpen else { return }
                self.submitAnswer(answer)
                self.scheduleZeroDelayPass(.flush, on: self.worker.loop)
            }
            return
        }
        delayedAnswers.append(answer)
        latestDue = answer.due
        if delayTimer == nil { armDelayTimer() }
    }

    private func armDelayTimer() {
        guard let first = delayedAnswers.first else { return }
        delayTimer = worker.loop.schedule(atNanoseconds: first.due) { [weak self] in
            guard let self else { return }
            self.delayTimer = nil
            self.releaseDueAnswers()
        }
    }

    /// Every answer now due, then one flush for all of them.
    private func releaseDueAnswers() {
        guard phase.isOpen else { return }
        let now = worker.loop.now
        while let first = delayedAnswers.first, first.due <= now {
            delayedAnswers.popFirst()
            submitAnswer(first)
        }
        armDelayTimer()
        flush()
    }

    private func submitAnswer(_ answer: DelayedAnswer) {
        // The client may have reset the stream meanwhile: then nothing is sent.
        try? session?.submitResponse(streamID: answer.streamID, status: answer.status, headers: answer.headers,
                                     body: answer.body)
    }

    private func flush() {
        guard phase.isOpen, let session else { return }
        switch pump.write(session, through: tls, host: self) {
        case .flushed:
            break
        case .wantWrite, .wantRead:
            writeBlocked = true
            updateInterest()
            return
        case .closed, .failed:
            close(graceful: false)
            return
        }
        writeBlocked = false
        updateInterest()
        if !session.wantsRead && !session.wantsWrite {
            close(graceful: true)
        } else if phase.goAwayLastStreamID != nil && session.activeStreamCount == 0 {
            close(graceful: true)
        }
    }

    private func updateInterest() {
        guard phase.isOpen else { return }
        var interest: IOEvents = []
        if pump.pendingBytes < pump.highWater { interest.insert(.readable) }
        if writeBlocked { interest.insert(.writable) }
        worker.loop.setInterest(fd, interest)
    }

    func announce(maxConcurrentStreams: UInt32) {
        guard phase.isOpen, let session else { return }
        raiseLimitOnFirstRequest = false
        try? session.submitSettings(maxConcurrentStreams: maxConcurrentStreams)
        flush()
    }

    func close(graceful: Bool) {
        guard phase != .closed else { return }
        phase = .closed
        if let timer { worker.loop.cancel(timer) }
        timer = nil
        if let delayTimer { worker.loop.cancel(delayTimer) }
        delayTimer = nil
        delayedAnswers = FIFO()
        // close_notify is best effort: a non-blocking socket takes it or not.
        if graceful { tls.shutdown() }
        worker.loop.deregister(fd)
        socket.close()
        worker.connectionClosed(self)
        worker.state.log("connection \(id) closed")
    }

    // MARK: HTTP2ServerSessionDelegate

    func session(_ session: HTTP2ServerSession, didReceiveRequest request: HTTP2Request) {
        // Requests read in the same pass after a drop decision get nothing.
        guard phase.takesRequests else { return }
        requestCount += 1
        if let last = phase.goAwayLastStreamID, request.streamID > last {
            // Arrived in the same read as the request that triggered GOAWAY:
            // refused, so the client resends it elsewhere (RFC 9113 §8.7).
            try? session.submitRSTStream(id: request.streamID, errorCode: .refusedStream)
            return
        }
        let behavior = worker.behavior
        if raiseLimitOnFirstRequest {
            raiseLimitOnFirstRequest = false
            try? session.submitSettings(maxConcurrentStreams: behavior.maxConcurrentStreams)
        }
        if let limit = behavior.dropAfterStreams, requestCount >= limit {
            worker.state.received.wrappingAdd(1, ordering: .relaxed)
            worker.state.droppedConnections.wrappingAdd(1, ordering: .relaxed)
            phase = .dropping(goAwayLastStreamID: phase.goAwayLastStreamID)
            return
        }
        if let limit = behavior.goAwayAfterStreams, requestCount >= limit, phase == .serving {
            phase = .goingAway(lastStreamID: request.streamID)
            try? session.submitGoAway(lastStreamID: request.streamID)
            if let timer { worker.loop.cancel(timer) }
            timer = worker.loop.schedule(after: Self.drainTimeout) { [weak self] in
                self?.timer = nil
                self?.close(graceful: false)
            }
        }
        let decision = worker.decide(request, credential: credential, connectionID: id, behavior: behavior,
                                     boundKey: &boundKey)
        switch decision {
        case .respond(let status, let headers, let body):
            if behavior.responseDelay > .zero {
                holdAnswer(DelayedAnswer(due: EventLoop.deadline(after: behavior.responseDelay, from: worker.loop.now),
                                         streamID: request.streamID, status: status, headers: headers, body: body))
            } else {
                try? session.submitResponse(streamID: request.streamID, status: status, headers: headers, body: body)
            }
        case .noAnswer:
            break
        case .resetStream:
            try? session.submitRSTStream(id: request.streamID, errorCode: .internalError)
        case .dropConnection:
            phase = .dropping(goAwayLastStreamID: phase.goAwayLastStreamID)
        }
    }

    func session(_ session: HTTP2ServerSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {}
}

// MARK: HTTP2TLSPumpHost

extension EmulatorConnection: ZeroDelayPassHost {
    /// A read continuation reads what OpenSSL holds (if still open). A
    /// flush sends delayed answers that fell due in a burst (every request of
    /// one read shares a deadline) together after this pass of timers, in one
    /// TLS write, rather than one record and one write(2) each, which cost the
    /// emulator twice the CPU per answer and woke the client per answer.
    func runZeroDelayPass(_ pass: ZeroDelayPasses) {
        if pass == .readContinuation {
            if phase.isOpen { readAvailable() }
        } else {
            flush()
        }
    }
}

extension EmulatorConnection: HTTP2TLSPumpHost {
    /// Not after a close or a decision to drop the connection, nor while
    /// the client leaves our answers unread.
    var keepsReading: Bool { phase.takesRequests && pump.pendingBytes < pump.highWater }

    /// The emulator resends nothing: where frames begin does not matter.
    func framesSerialized(at offset: UInt64) {}
}
