import EventLoop
import HTTP2
import RelayCore
import TLS

/// One notification from `send` to its completion. Owned by the pool; a
/// connection holds it while its stream is open.
final class PendingRequest {
    enum Phase {
        /// Waiting in the pool's queue (never handed to a session).
        case queued
        /// Handed to a session as `streamID`.
        case inFlight(APNsConnection, Int32)
        case finished
    }

    /// Who waits for the result, in the form they asked for it (no wrapping
    /// closure, which would be one more allocation per notification).
    enum Completion {
        case delivery((APNsDelivery) -> Void)
        case outcome((DeliveryOutcome) -> Void)
    }

    let notification: APNsNotification
    let completion: Completion
    var phase: Phase = .queued
    /// When the answer timeout fires (`EventLoop.now` scale), measured from `send`.
    var answerDeadline: UInt64 = 0
    /// Position in the pool's `AnswerDeadlines` while tracked there.
    var deadlineSequence: UInt64?
    /// Response so far.
    var status: Int?
    var responseAPNsID: String?
    var body: [UInt8] = []
    /// The provider token the request carried (token auth), for `tokenRejected`.
    var tokenIssuedAt: Int?
    /// Times it was handed back unprocessed (GOAWAY, REFUSED_STREAM).
    var resendCount = 0
    /// The completion ran (set once, before it runs).
    var isCompleted = false
    /// Where, in the bytes this connection handed to OpenSSL, the request's
    /// frames can start at the earliest (nil: not yet serialized). When the
    /// connection dies with fewer bytes written, APNs never saw the request.
    var earliestWireOffset: UInt64?

    init(notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        self.notification = notification
        self.completion = .delivery(completion)
    }

    init(notification: APNsNotification, completion: Completion) {
        self.notification = notification
        self.completion = completion
    }

    func complete(_ delivery: APNsDelivery) {
        switch completion {
        case .delivery(let body): body(delivery)
        case .outcome(let body): body(delivery.outcome)
        }
    }

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }
}

/// What a connection tells its pool. Called on the loop thread, never from
/// inside an nghttp2 callback.
protocol APNsConnectionOwner: AnyObject {
    /// The server's SETTINGS arrived, or a stream finished: new streams may fit.
    func connectionHasCapacity(_ connection: APNsConnection)
    /// The server sent GOAWAY: no new stream goes to this connection.
    func connectionIsDraining(_ connection: APNsConnection)
    /// A request ended (answer or stream failure).
    func connection(_ connection: APNsConnection, finished request: PendingRequest, with delivery: APNsDelivery)
    /// The server provably never processed `requests` (REFUSED_STREAM, above
    /// GOAWAY's last-stream-id): send them again elsewhere.
    func connection(_ connection: APNsConnection, returnedUnprocessed requests: [PendingRequest])
    /// An idle connection sent a PING (RFC 9113 §6.7) to check the peer.
    func connectionSentPing(_ connection: APNsConnection)
    /// The connection is closed; `failure` nil for an orderly close. Its
    /// requests were already finished or returned.
    func connectionDidClose(_ connection: APNsConnection, failure: ConnectionFailure?, wasReady: Bool)
}

/// Where a connection goes and how it authenticates.
struct APNsEndpoint {
    var host: String
    var port: UInt16
    /// `:authority`: the host, with the port when it is not 443 (RFC 9110 §7.2).
    var authority: String
    var tlsContext: TLSContext
    var tokenProvider: APNsTokenProvider?
    var connectTimeout: Duration
    var pingInterval: Duration
    var pingTimeout: Duration
    var wallClock: @Sendable () -> Int
}

/// One HTTP/2 connection to APNs: moves bytes between the socket, OpenSSL and
/// the nghttp2 session, and performs what `ConnectionLifecycle` decides.
final class APNsConnection: IOHandler, HTTP2ClientSessionDelegate {
    private let loop: EventLoop
    private let endpoint: APNsEndpoint
    private weak var owner: (any APNsConnectionOwner)?
    private(set) var lifecycle = ConnectionLifecycle()

    private var socket: Socket?
    private var tls: TLSConnection?
    private var handshakeDone = false
    private var session: HTTP2ClientSession?
    /// Requests on this connection by stream id.
    private var streams: [Int32: PendingRequest] = [:]

    /// Serialized HTTP/2 frames not yet taken by OpenSSL: `output[outputSent...]`.
    private var output: [UInt8] = []
    private var outputSent = 0
    /// Stop pulling frames from nghttp2 beyond this (back-pressure: the rest
    /// waits inside the session until the socket drains).
    private static let outputHighWater = 256 * 1024
    private var flushScheduled = false
    /// A read pass stopped after 64 reads with input left inside OpenSSL.
    private var readContinuationScheduled = false
    /// Bytes ever taken from nghttp2, and ever accepted by OpenSSL (a TLS
    /// record is written whole or retried whole: a partial record on the
    /// wire cannot be decrypted, so it cannot be processed).
    private var serializedTotal: UInt64 = 0
    private var writtenTotal: UInt64 = 0
    /// Submitted since the last drain that produced bytes.
    private var unserialized: [PendingRequest] = []
    /// OpenSSL asked for writability to finish a read (TLS 1.3 key update).
    private var readWantsWrite = false
    private var registered = false
    private var interest: IOEvents = []

    private let readBuffer: UnsafeMutableRawBufferPointer
    private static let readBufferSize = 16 * 1024

    private var connectTimer: TimerID?
    private var pingTimer: TimerID?
    private var pingTimeoutTimer: TimerID?
    private var lastReadAt: UInt64 = 0
    private var pingPayload: UInt64 = 0

    /// Answers and returns gathered during `receive` (nghttp2 callbacks) and
    /// handed to the owner after it returns, so the owner's code never runs
    /// inside nghttp2.
    private var finishedRequests: [(PendingRequest, APNsDelivery)] = []
    /// `finishedRequests`' other buffer: the two take turns, so handing a
    /// batch over allocates nothing.
    private var spareFinishedRequests: [(PendingRequest, APNsDelivery)] = []
    private var unprocessedRequests: [PendingRequest] = []
    private var capacityChanged = false
    private var becameDraining = false

    init(loop: EventLoop, endpoint: APNsEndpoint, owner: any APNsConnectionOwner) {
        self.loop = loop
        self.endpoint = endpoint
        self.owner = owner
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 1)
    }

    deinit {
        readBuffer.deallocate()
    }

    var state: APNsConnectionState { lifecycle.state }

    /// Streams open (submitted, not yet closed) on this connection.
    var openStreamCount: Int { streams.count }

    /// New requests this connection takes now (0 unless ready).
    var availableStreams: Int {
        guard lifecycle.state == .ready, let session, !session.isGoingAway, session.failure == nil,
              output.count - outputSent < Self.outputHighWater else { return 0 }
        let limit = Int(min(session.remoteMaxConcurrentStreams, 1_000_000))
        return max(0, limit - session.activeStreamCount)
    }

    /// Whether a request with `bodyBytes` of payload should go here now: a
    /// free stream, and room for its body in the server's connection
    /// flow-control window beyond the bodies already waiting (RFC 9113
    /// §6.9.1). APNs does not say how large that window is; at the 65,535
    /// bytes a connection starts with, two dozen notifications fill it, and
    /// nghttp2 would share what the server frees among every body queued
    /// behind it, so all of them would finish late (measured: p99 0.3-0.6 s
    /// at 512 senders). Waiting in the pool's queue keeps them in order and
    /// lets the pool open another connection. With nothing waiting, a body
    /// is taken whatever the window, so a tiny window still makes progress.
    func canTake(bodyBytes: Int) -> Bool {
        guard availableStreams > 0, let session else { return false }
        return session.unsentBodyBytes == 0 || session.sendableBodyBytes >= bodyBytes
    }

    // MARK: Lifecycle actions

    func start() {
        perform(lifecycle.start())
    }

    /// Graceful close: GOAWAY, open streams finish, then close.
    func drain() {
        perform(lifecycle.drain())
        checkDrained()
    }

    private func perform(_ actions: [ConnectionLifecycle.Action]) {
        for action in actions {
            switch action {
            case .resolve:
                Resolver.resolve(host: endpoint.host, port: endpoint.port, on: loop) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .success(let addresses): self.perform(self.lifecycle.resolved(addresses))
                    case .failure(let error): self.perform(self.lifecycle.resolveFailed(error.description))
                    }
                }
            case .armConnectTimeout:
                let timeout = endpoint.connectTimeout
                connectTimer = loop.schedule(after: timeout) { [weak self] in
                    guard let self else { return }
                    self.connectTimer = nil
                    self.perform(self.lifecycle.connectTimedOut(after: "\(timeout)"))
                }
            case .connect(let address):
                connect(to: address)
            case .startTLSHandshake:
                startTLS()
            case .startHTTP2Session:
                startSession()
            case .cancelConnectTimeout:
                if let connectTimer { loop.cancel(connectTimer) }
                connectTimer = nil
            case .becameReady:
                lastReadAt = loop.now
                schedulePingCheck()
                capacityChanged = true
            case .sendGoAway:
                try? session?.submitGoAway()
                scheduleFlush()
            case .close(let failure):
                tearDown(failure)
            }
        }
    }

    // MARK: Connect and handshake

    private func connect(to address: SocketAddress) {
        closeSocket()
        do {
            let (socket, progress) = try Socket.connect(to: address)
            self.socket = socket
            try loop.register(socket.fileDescriptor, interest: .writable, handler: self)
            registered = true
            interest = .writable
            if progress == .connected { perform(lifecycle.connected()) }
        } catch {
            perform(lifecycle.connectFailed("\(address): \(error)"))
        }
    }

    private func startTLS() {
        guard let socket else { return }
        do {
            let connection = try TLSConnection(context: endpoint.tlsContext, fd: socket.fileDescriptor,
                                               serverName: endpoint.host)
            // One read(2) per burst of answers, not two per TLS record;
            // readAvailable reads until .wantRead (or comes back itself).
            connection.enableReadAhead()
            tls = connection
        } catch {
            perform(lifecycle.failed(error.description))
            return
        }
        continueHandshake()
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .complete:
            handshakeDone = true
            perform(lifecycle.handshakeCompleted(alpn: tls.negotiatedALPN))
        case .wantRead:
            setInterest(.readable)
        case .wantWrite:
            setInterest(.writable)
        case .closed:
            perform(lifecycle.failed("server closed the connection during the TLS handshake"))
        case .failed(let error):
            perform(lifecycle.failed(error.description))
        }
    }

    private func startSession() {
        do {
            session = try HTTP2ClientSession(delegate: self)
        } catch {
            perform(lifecycle.failed(error.description))
            return
        }
        setInterest(.readable)
        // The server's preface may already sit decrypted inside OpenSSL.
        readAvailable()
        flushOutput()
        afterEvents()
    }

    // MARK: Requests

    enum SubmitResult: Equatable {
        case submitted
        /// The session takes no new stream (GOAWAY raced in): try elsewhere.
        case refused
        /// The request itself cannot go over HTTP/2 (a header it forbids):
        /// APNs never saw it and no other connection would take it.
        case unsendable(String)
    }

    /// Hands `request` to the session.
    func submit(_ request: PendingRequest) -> SubmitResult {
        guard lifecycle.state == .ready, let session else { return .refused }
        var authorization: String?
        if let provider = endpoint.tokenProvider {
            let (value, issuedAt) = provider.currentAuthorization(now: endpoint.wallClock())
            authorization = value
            request.tokenIssuedAt = issuedAt
        }
        let streamID: Int32
        do {
            streamID = try session.submitRequest(
                method: "POST", path: request.notification.path, authority: endpoint.authority,
                fields: APNsRequestFields(headers: request.notification.headers, authorization: authorization),
                body: request.notification.payload)
        } catch {
            if case .invalidUse(let reason) = error { return .unsendable(reason) }
            return .refused
        }
        request.phase = .inFlight(self, streamID)
        request.earliestWireOffset = nil
        streams[streamID] = request
        unserialized.append(request)
        scheduleFlush()
        return .submitted
    }

    /// The answer timeout fired: reset the stream; a late answer is ignored.
    func cancel(streamID: Int32) {
        guard streams.removeValue(forKey: streamID) != nil else { return }
        try? session?.submitRSTStream(id: streamID, errorCode: .cancel)
        scheduleFlush()
        checkDrained()
    }

    // MARK: I/O

    func handleIO(_ events: IOEvents) {
        switch lifecycle.state {
        case .connecting:
            guard let socket else { return }
            if let error = socket.pendingConnectError() {
                perform(lifecycle.connectFailed(error.description))
            } else if events.contains(.writable) || events.contains(.hangup) || events.contains(.error) {
                perform(lifecycle.connected())
            }
        case .handshaking where !handshakeDone:
            continueHandshake()
        case .handshaking, .ready, .draining:
            if events.contains(.writable) && readWantsWrite {
                readWantsWrite = false
                readAvailable()
            }
            if !events.isDisjoint(with: [.readable, .hangup, .error]) {
                readAvailable()
            }
            // Once per event batch: what we submitted and what nghttp2 owes
            // the server (SETTINGS and PING acks, WINDOW_UPDATE) goes out.
            flushOutput()
            afterEvents()
        case .idle, .resolving, .closed:
            return
        }
    }

    /// Reads and feeds nghttp2 until OpenSSL has nothing more (bounded for
    /// fairness; level-triggered epoll calls again for bytes left in the
    /// socket, but not for bytes buffered inside OpenSSL, hence the check).
    private func readAvailable() {
        var reads = 0
        while let tls, let session, lifecycle.state != .closed {
            switch tls.read(into: readBuffer) {
            case .bytes(let count):
                lastReadAt = loop.now
                if let error = Self.feed(session, UnsafeRawBufferPointer(rebasing: readBuffer[0..<count])) {
                    flushOutput()  // the GOAWAY nghttp2 queued, best effort
                    perform(lifecycle.failed("HTTP/2: \(error)"))
                    return
                }
            case .wantRead:
                return
            case .wantWrite:
                readWantsWrite = true
                setInterest(interest.union(.writable))
                return
            case .closed:
                // After GOAWAY with every stream answered, EOF is the
                // server's orderly close (APNs closes after its GOAWAY).
                if lifecycle.state == .draining && streams.isEmpty {
                    perform(lifecycle.drained())
                } else {
                    perform(lifecycle.failed("server closed the connection"))
                }
                return
            case .failed(let error):
                // So is a reset then: a server closing with bytes of ours
                // still unread makes TCP send RST instead of FIN.
                if lifecycle.state == .draining && streams.isEmpty {
                    perform(lifecycle.drained())
                } else {
                    perform(lifecycle.failed(error.description))
                }
                return
            }
            reads += 1
            if reads >= 64 {
                // Fairness: let other descriptors run. With read-ahead,
                // records OpenSSL already holds are invisible to epoll: come
                // back for them on the next pass (a partial record alone
                // waits for the socket, which epoll does announce).
                if tls.hasUnprocessedInput && !readContinuationScheduled {
                    readContinuationScheduled = true
                    loop.schedule(after: .zero) { [weak self] in
                        guard let self else { return }
                        self.readContinuationScheduled = false
                        self.readAvailable()
                        self.flushOutput()
                        self.afterEvents()
                    }
                }
                return
            }
        }
    }

    /// Not generic and not a closure: Swift 6.3.1 crashes compiling a
    /// `throws(HTTP2Error)` closure passed to `withUnsafeBytes`.
    private static func feed(_ session: HTTP2ClientSession, _ bytes: UnsafeRawBufferPointer) -> HTTP2Error? {
        do {
            try session.receive(bytes)
            return nil
        } catch {
            return error
        }
    }

    /// Takes frames from nghttp2 and writes them through OpenSSL until the
    /// socket is full or nothing is left.
    private func flushOutput() {
        guard let tls, let session, lifecycle.state != .closed else { return }
        while true {
            if outputSent == output.count {
                output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
                outputSent = 0
            }
            if output.count - outputSent < Self.outputHighWater { drain(session) }
            guard outputSent < output.count else { break }
            let sent = outputSent
            let result = output.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
            switch result {
            case .bytes(let count):
                outputSent += count
                writtenTotal += UInt64(count)
            case .wantWrite:
                setInterest([.readable, .writable])
                return
            case .wantRead:
                // The write resumes after the next read (flushOutput runs
                // after every event batch).
                setInterest(.readable)
                return
            case .closed:
                writeFailed("server closed the connection")
                return
            case .failed(let error):
                writeFailed(error.description)
                return
            }
        }
        setInterest(readWantsWrite ? [.readable, .writable] : .readable)
    }

    /// A write failed (EPIPE, ECONNRESET): the server closed, typically right
    /// after its GOAWAY and last answers, while we were still sending. Those
    /// answers and the GOAWAY may still be unread, in the socket's receive
    /// queue (Linux returns queued data before a RST's error) or inside
    /// OpenSSL. Failing now would fail streams that were answered and streams
    /// above last-stream-id that were never processed and must be resent
    /// (RFC 9113 §6.8). So read everything first; only then is the
    /// connection lost, and tearDown applies the GOAWAY's last-stream-id.
    private func writeFailed(_ reason: String) {
        // Bounded: a socket receive queue holds a few MB at most.
        var reads = 0
        reading: while let tls, let session, lifecycle.state != .closed, reads < 4096 {
            reads += 1
            switch tls.read(into: readBuffer) {
            case .bytes(let count):
                if let error = Self.feed(session, UnsafeRawBufferPointer(rebasing: readBuffer[0..<count])) {
                    perform(lifecycle.failed("HTTP/2: \(error)"))
                    return
                }
            case .wantRead, .wantWrite, .closed, .failed:
                break reading
            }
        }
        if lifecycle.state == .draining && streams.isEmpty {
            // GOAWAY read and everything owed answered: the server's orderly
            // close, as when readAvailable meets EOF.
            perform(lifecycle.drained())
        } else {
            perform(lifecycle.failed(reason))
        }
    }

    /// Takes frames from nghttp2 into `output`, noting for the requests
    /// submitted since the last drain the earliest offset of their frames.
    private func drain(_ session: HTTP2ClientSession) {
        let before = output.count
        session.drainOutput(into: &output)
        let added = output.count - before
        guard added > 0 else { return }
        if !unserialized.isEmpty {
            for request in unserialized { request.earliestWireOffset = serializedTotal }
            unserialized.removeAll(keepingCapacity: true)
        }
        serializedTotal += UInt64(added)
    }

    private func scheduleFlush() {
        guard !flushScheduled, lifecycle.state != .closed else { return }
        flushScheduled = true
        // A zero-delay timer runs after this iteration's I/O: every request
        // submitted in one event batch goes out in one write.
        loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.flushOutput()
            self.afterEvents()
        }
    }

    /// Hands gathered results to the owner and closes a drained connection.
    private func afterEvents() {
        deliverResults()
        checkDrained()
    }

    private func deliverResults() {
        guard let owner else { return }
        if !unprocessedRequests.isEmpty {
            let requests = unprocessedRequests
            unprocessedRequests.removeAll()
            owner.connection(self, returnedUnprocessed: requests)
        }
        if !finishedRequests.isEmpty {
            // Take the batch and leave the spare buffer in its place (an
            // owner's callback may end up here again and gather more).
            var finished = finishedRequests
            finishedRequests = spareFinishedRequests
            spareFinishedRequests = []
            for (request, delivery) in finished { owner.connection(self, finished: request, with: delivery) }
            finished.removeAll(keepingCapacity: true)
            spareFinishedRequests = finished
        }
        if becameDraining {
            becameDraining = false
            owner.connectionIsDraining(self)
        }
        if capacityChanged {
            capacityChanged = false
            if lifecycle.state == .ready { owner.connectionHasCapacity(self) }
        }
    }

    private func checkDrained() {
        guard lifecycle.state == .draining, streams.isEmpty else { return }
        if let session, session.wantsWrite { flushOutput() }
        guard lifecycle.state == .draining else { return }
        perform(lifecycle.drained())
    }

    private func setInterest(_ wanted: IOEvents) {
        guard registered, let socket, wanted != interest else { return }
        interest = wanted
        loop.setInterest(socket.fileDescriptor, wanted)
    }

    // MARK: PING (RFC 9113 §6.7) when idle

    private func schedulePingCheck() {
        let interval = endpoint.pingInterval
        pingTimer = loop.schedule(after: interval) { [weak self] in
            guard let self else { return }
            self.pingTimer = nil
            self.checkIdle()
        }
    }

    private func checkIdle() {
        guard lifecycle.state == .ready || lifecycle.state == .draining, let session else { return }
        let interval = endpoint.pingInterval.saturatingNanoseconds
        if loop.now &- lastReadAt >= interval, pingTimeoutTimer == nil {
            pingPayload &+= 1
            do {
                try session.submitPing(payload: pingPayload)
            } catch {
                perform(lifecycle.failed("cannot send PING: \(error)"))
                return
            }
            let timeout = endpoint.pingTimeout
            pingTimeoutTimer = loop.schedule(after: timeout) { [weak self] in
                guard let self else { return }
                self.pingTimeoutTimer = nil
                self.perform(self.lifecycle.failed("no PING answer within \(timeout)"))
            }
            scheduleFlush()
            owner?.connectionSentPing(self)
        }
        schedulePingCheck()
    }

    // MARK: Teardown

    private func tearDown(_ failure: ConnectionFailure?) {
        for timer in [connectTimer, pingTimer, pingTimeoutTimer] {
            if let timer { loop.cancel(timer) }
        }
        connectTimer = nil
        pingTimer = nil
        pingTimeoutTimer = nil
        if failure == nil, let session {
            // Orderly: push out the last frames and close_notify, best effort.
            drain(session)
            if outputSent < output.count, let tls {
                let sent = outputSent
                _ = output.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
            }
            tls?.shutdown()
        }
        // No close report comes for streams still open (RFC 9113 §6.8: those
        // above the GOAWAY's last-stream-id were never processed).
        let goAwayLastStreamID = session?.lastProcessedStreamID
        let detail = failure?.description ?? "connection closed"
        for (streamID, request) in streams.sorted(by: { $0.key < $1.key }) {
            if let last = goAwayLastStreamID, streamID > last {
                unprocessedRequests.append(request)
            } else if request.earliestWireOffset.map({ $0 >= writtenTotal }) ?? true {
                // Its HEADERS never left this process: safe to send again.
                unprocessedRequests.append(request)
            } else {
                finishedRequests.append((request, APNsDelivery(outcome: .streamFailed("connection lost: \(detail)"))))
            }
        }
        streams.removeAll()
        unserialized.removeAll()
        session = nil
        tls = nil
        closeSocket()
        output = []
        outputSent = 0
        // Deferred: tearDown may run inside a caller's loop over connections.
        let wasReady = lifecycle.wasReady
        deliverResults()
        owner?.connectionDidClose(self, failure: failure, wasReady: wasReady)
    }

    private func closeSocket() {
        guard let socket else { return }
        if registered { loop.deregister(socket.fileDescriptor) }
        registered = false
        interest = []
        socket.close()
        self.socket = nil
    }

    // MARK: HTTP2ClientSessionDelegate (inside `receive`/`drainOutput`)

    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int,
                 fields: HTTP2HeaderFields, streamID: Int32) {
        guard let request = streams[streamID] else { return }
        request.status = status
        // APNs echoes the apns-id we sent: share our String rather than
        // building an equal one.
        if fields.value(for: "apns-id", equals: request.notification.apnsID) {
            request.responseAPNsID = request.notification.apnsID
        } else if let returned = fields.value(for: "apns-id") {
            request.responseAPNsID = returned
        }
    }

    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        guard let request = streams[streamID] else { return }
        // APNs error bodies are a few dozen bytes; keep a bounded prefix.
        let room = 4096 - request.body.count
        if room > 0 { request.body.append(contentsOf: bytes.prefix(room)) }
    }

    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
        guard let request = streams.removeValue(forKey: streamID) else { return }
        capacityChanged = true
        if errorCode == .refusedStream {
            // RFC 9113 §8.7: not processed, safe to send again.
            unprocessedRequests.append(request)
            return
        }
        guard errorCode == .noError, let status = request.status else {
            let reason = errorCode == .noError ? "stream ended without a response" : "stream reset: \(errorCode)"
            finishedRequests.append((request, APNsDelivery(outcome: .streamFailed(reason))))
            return
        }
        finishedRequests.append((request, Self.delivery(status: status, apnsID: request.responseAPNsID, body: request.body)))
    }

    static func delivery(status: Int, apnsID: String?, body: [UInt8]) -> APNsDelivery {
        guard status != 200 else {
            return APNsDelivery(outcome: .apns(status: 200, reason: nil, apnsID: apnsID))
        }
        let parsed = parseAPNsErrorBody(body)
        return APNsDelivery(
            outcome: .apns(status: status, reason: parsed.reason.map(APNsReason.init(rawValue:)), apnsID: apnsID),
            unregisteredTimestamp: status == 410 ? parsed.timestamp : nil)
    }

    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {
        capacityChanged = true
        perform(lifecycle.settingsReceived())
    }

    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32,
                 errorCode: HTTP2ErrorCode, debugData: String) {
        let wasReady = lifecycle.state == .ready
        let actions = lifecycle.goAwayReceived()
        if wasReady, lifecycle.state == .draining { becameDraining = true }
        // A close decided here waits until `receive` returns (tearDown frees
        // the session, which must not happen inside its own callback).
        if !actions.isEmpty {
            loop.schedule(after: .zero) { [weak self] in self?.perform(actions) }
        }
    }

    func sessionConnectionWindowOpened(_ session: HTTP2ClientSession) {
        capacityChanged = true
    }

    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64) {
        if let pingTimeoutTimer { loop.cancel(pingTimeoutTimer) }
        pingTimeoutTimer = nil
    }
}

/// The regular fields of one APNs request, read from the notification's own
/// array (no copy), then `authorization` with token auth. apns-id is unique
/// to the request: never indexed (RFC 7541 §6.2.3), so it does not churn the
/// HPACK tables of either side; the fields that repeat stay indexed.
struct APNsRequestFields: Sequence {
    let headers: [HTTPField]
    let authorization: String?

    struct Iterator: IteratorProtocol {
        let fields: APNsRequestFields
        var index = 0

        mutating func next() -> HTTP2HeaderField? {
            defer { index += 1 }
            if index < fields.headers.count {
                let field = fields.headers[index]
                return HTTP2HeaderField(name: field.name, value: field.value, neverIndexed: field.name == "apns-id")
            }
            if index == fields.headers.count, let authorization = fields.authorization {
                return HTTP2HeaderField(name: "authorization", value: authorization)
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(fields: self) }

    var underestimatedCount: Int { headers.count + (authorization == nil ? 0 : 1) }
}
