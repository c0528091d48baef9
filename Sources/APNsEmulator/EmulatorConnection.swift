import EventLoop
import Glibc
import HTTP2
import HTTP2Transport
import RelayCore
import Synchronization
import TLS

/// One loop thread's share of the emulator: its listener, its connections,
/// a read buffer they share, its provider-token cache and a cached copy of
/// the behaviour. Confined to the loop thread.
final class EmulatorWorker {
    let loop: EventLoop
    let state: EmulatorState
    private var acceptor: Acceptor?
    private var connections: [ObjectIdentifier: EmulatorConnection] = [:]
    /// TLS reads land here; `receive` consumes it before the next read.
    let readBuffer: UnsafeMutableRawBufferPointer
    let providerTokens: ProviderTokenVerifier?
    private var cachedBehavior: APNsEmulatorBehavior
    private var cachedVersion: UInt64
    private var random = SystemRandomNumberGenerator()

    /// What to do with one complete request.
    enum Decision {
        case respond(status: Int, headers: [(name: String, value: String)], body: [UInt8])
        case noAnswer
        case resetStream
        case dropConnection
    }

    init(loop: EventLoop, state: EmulatorState, listener: Socket) throws(EventLoopError) {
        self.loop = loop
        self.state = state
        readBuffer = .allocate(byteCount: 65_536, alignment: 16)
        if case .token(_, let keyID, let teamID) = state.configuration.authentication, let verifier = state.tokenVerifier {
            providerTokens = ProviderTokenVerifier(verifier: verifier, keyID: keyID, teamID: teamID)
        } else {
            providerTokens = nil
        }
        cachedVersion = state.behaviorVersion.load(ordering: .acquiring)
        cachedBehavior = state.behavior.withLock { $0 }
        acceptor = try Acceptor(listener: listener, on: loop, onAccept: { [unowned self] socket in
            self.accept(socket)
        }, onError: { [unowned self] error in
            self.state.log("accept failed: \(error)")
        })
    }

    deinit {
        readBuffer.deallocate()
    }

    /// The behaviour now in force (one atomic load unless it changed).
    var behavior: APNsEmulatorBehavior {
        let version = state.behaviorVersion.load(ordering: .acquiring)
        if version != cachedVersion {
            cachedBehavior = state.behavior.withLock { $0 }
            cachedVersion = version
        }
        return cachedBehavior
    }

    private func accept(_ socket: Socket) {
        let id = state.connections.wrappingAdd(1, ordering: .relaxed).newValue
        do {
            let connection = try EmulatorConnection(worker: self, socket: socket, id: id)
            connections[ObjectIdentifier(connection)] = connection
            state.openConnections.wrappingAdd(1, ordering: .relaxed)
            connection.start()
            state.log("connection \(id) accepted")
        } catch {
            state.log("connection \(id) refused: \(error)")
        }
    }

    func connectionClosed(_ connection: EmulatorConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        state.openConnections.wrappingSubtract(1, ordering: .relaxed)
    }

    func credential(for tls: TLSConnection) -> ClientCredential {
        switch state.configuration.authentication {
        case .clientCertificate: .certificate(uid: tls.peerCertificateSubjectUID)
        case .token: providerTokens.map { .token($0) } ?? .none
        case .none: .none
        }
    }

    func announce(maxConcurrentStreams: UInt32) {
        for connection in connections.values {
            connection.announce(maxConcurrentStreams: maxConcurrentStreams)
        }
    }

    /// Closes the listener and every connection (on stop).
    func shutdown() {
        acceptor?.close()
        acceptor = nil
        for connection in Array(connections.values) {
            connection.close(graceful: true)
        }
    }

    // MARK: deciding

    /// Validation, then the fault table, then a forced action, else 200.
    func decide(_ request: HTTP2Request, credential: ClientCredential, connectionID: Int,
                behavior: APNsEmulatorBehavior) -> Decision {
        state.received.wrappingAdd(1, ordering: .relaxed)
        let now = Int(time(nil))
        let notification: ValidatedNotification
        switch APNsRequestValidator.validate(
            method: request.method, path: request.path, headers: request.headers, body: request.body,
            credential: credential, expectedTopic: state.configuration.expectedTopic, now: now) {
        case .failure(let rejection):
            return reject(rejection, apnsID: echoedID(request.header("apns-id")), now: now)
        case .success(let validated):
            notification = validated
        }
        var action = APNsFaultToken.action(forToken: notification.token.utf8)
        if action == nil, let forced = behavior.forcedAction, state.claimForced(behavior) {
            action = forced
        }
        if let action {
            switch action {
            case .reject(let status, let reason):
                return reject(APNsRejection(status: status, reason: reason), apnsID: echoedID(notification.apnsID),
                              now: now)
            case .noAnswer:
                state.unanswered.wrappingAdd(1, ordering: .relaxed)
                return .noAnswer
            case .resetStream:
                state.resetStreams.wrappingAdd(1, ordering: .relaxed)
                return .resetStream
            case .dropConnection:
                state.droppedConnections.wrappingAdd(1, ordering: .relaxed)
                return .dropConnection
            }
        }
        let apnsID = notification.apnsID ?? UUIDKey.random(using: &random).text
        if let key = notification.apnsIDKey {
            let fresh = state.ledger.withLock { $0.insert(key).inserted }
            if !fresh { state.duplicates.wrappingAdd(1, ordering: .relaxed) }
        }
        state.accepted.wrappingAdd(1, ordering: .relaxed)
        let observe = state.hasObserver.load(ordering: .acquiring)
        if state.configuration.recordNotifications || observe {
            let record = ReceivedNotification(
                deviceToken: String(notification.token), headers: request.headers, payload: request.body,
                apnsID: apnsID, apnsIDWasGenerated: notification.apnsID == nil, topic: notification.topic,
                priority: notification.priority, expiration: notification.expiration,
                collapseID: notification.collapseID, pushType: notification.pushType,
                authenticatedAs: notification.authenticatedAs, connectionID: connectionID,
                streamID: request.streamID)
            if state.configuration.recordNotifications { state.records.withLock { $0.append(record) } }
            if observe, let observer = state.observer.withLock({ $0 }) { observer(record) }
        }
        return .respond(status: 200, headers: [("apns-id", apnsID)], body: [])
    }

    /// The client's apns-id when it is a UUID, else a new one (Apple always
    /// answers with an apns-id).
    private func echoedID(_ given: String?) -> String {
        if let given, UUIDKey(given[...].utf8) != nil { return given }
        return UUIDKey.random(using: &random).text
    }

    private func reject(_ rejection: APNsRejection, apnsID: String, now: Int) -> Decision {
        state.rejected.wrappingAdd(1, ordering: .relaxed)
        var body = "{\"reason\":\"" + rejection.reason.rawValue + "\""
        // Apple: 410 carries the time (ms) the token stopped being valid.
        if rejection.status == 410 { body += ",\"timestamp\":\(now * 1000)" }
        body += "}"
        return .respond(status: rejection.status,
                        headers: [("apns-id", apnsID), ("content-type", "application/json")],
                        body: Array(body.utf8))
    }
}

/// One client connection: TLS handshake, then HTTP/2 through
/// `HTTP2ServerSession`, with the per-connection GOAWAY/drop behaviours.
final class EmulatorConnection: IOHandler, HTTP2ServerSessionDelegate {
    private enum Phase { case handshaking, open, closed }

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
    /// Answers on their way to the client; reading stops while 1 MiB of
    /// them waits for the peer.
    private var pump = HTTP2TLSPump(highWater: 1 << 20, keptCapacity: 1 << 20)
    private var writeBlocked = false
    private var requestCount = 0
    private var goAwayLastStreamID: Int32?
    private var dropping = false
    private var raiseLimitOnFirstRequest = false
    private var timer: TimerID?
    private var continuationScheduled = false
    private var flushScheduled = false
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
        case .open:
            if events.contains(.error) {
                close(graceful: false)
                return
            }
            if events.contains(.writable) { flush() }
            if phase == .open, !events.isDisjoint(with: [.readable, .hangup]) { readAvailable() }
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
            phase = .open
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
            if moreBuffered { scheduleContinuation() }
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
        if dropping {
            // Answers already queued for earlier requests go out first, so
            // the client is not made to resend what was accepted.
            flush()
            close(graceful: false)
            return
        }
        flush()
    }

    private func scheduleContinuation() {
        guard !continuationScheduled else { return }
        continuationScheduled = true
        worker.loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.continuationScheduled = false
            if self.phase == .open { self.readAvailable() }
        }
    }

    private func holdAnswer(_ answer: DelayedAnswer) {
        if !delayedAnswers.isEmpty, answer.due < latestDue {
            // The delay was shortened while answers wait: this one must not
            // queue behind them.
            worker.loop.schedule(atNanoseconds: answer.due) { [weak self] in
                guard let self, self.phase == .open else { return }
                self.submitAnswer(answer)
                self.scheduleFlush()
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
        guard phase == .open else { return }
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

    /// Delayed answers fall due in bursts (every request of one read shares
    /// a deadline): they go out together after this pass of timers, in one
    /// TLS write, rather than one record and one write(2) each, which cost
    /// the emulator twice the CPU per answer and woke the client per answer.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        worker.loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.flush()
        }
    }

    private func flush() {
        guard phase == .open, let session else { return }
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
        } else if goAwayLastStreamID != nil && session.activeStreamCount == 0 {
            close(graceful: true)
        }
    }

    private func updateInterest() {
        guard phase == .open else { return }
        var interest: IOEvents = []
        if pump.pendingBytes < pump.highWater { interest.insert(.readable) }
        if writeBlocked { interest.insert(.writable) }
        worker.loop.setInterest(fd, interest)
    }

    func announce(maxConcurrentStreams: UInt32) {
        guard phase == .open, let session else { return }
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
        guard phase == .open, !dropping else { return }
        requestCount += 1
        if let last = goAwayLastStreamID, request.streamID > last {
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
            dropping = true
            return
        }
        if let limit = behavior.goAwayAfterStreams, requestCount >= limit, goAwayLastStreamID == nil {
            goAwayLastStreamID = request.streamID
            try? session.submitGoAway(lastStreamID: request.streamID)
            if let timer { worker.loop.cancel(timer) }
            timer = worker.loop.schedule(after: Self.drainTimeout) { [weak self] in
                self?.timer = nil
                self?.close(graceful: false)
            }
        }
        let decision = worker.decide(request, credential: credential, connectionID: id, behavior: behavior)
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
            dropping = true
        }
    }

    func session(_ session: HTTP2ServerSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {}
}

// MARK: HTTP2TLSPumpHost

extension EmulatorConnection: HTTP2TLSPumpHost {
    /// Not after a close or a decision to drop the connection, nor while
    /// the client leaves our answers unread.
    var keepsReading: Bool { phase == .open && !dropping && pump.pendingBytes < pump.highWater }

    /// The emulator resends nothing: where frames begin does not matter.
    func framesSerialized(at offset: UInt64) {}
}
