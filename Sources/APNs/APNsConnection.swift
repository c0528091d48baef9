import EventLoop
import HTTP2
import HTTP2Transport
import TLS

// Over 500 lines and still one thing: one connection to APNs. Performing
// the machine's actions, the handshake, the streams, the read and write
// passes, the idle PING and the teardown all work on the same private state
// (socket, TLS, session, open streams, results gathered for the owner); the
// pieces that stand alone live elsewhere: the lifecycle decisions in
// APNsConnectionMachine, the byte pump in HTTP2Transport, the request and its
// fields in PooledNotification and APNsRequestFields, the answer mapping in
// APNsResponse.

/// One HTTP/2 connection to APNs: moves bytes between the socket, OpenSSL and
/// the nghttp2 session (through `HTTP2TLSPump`), and performs what
/// `APNsConnectionMachine` decides.
///
/// Confined to its loop; nghttp2's callbacks only record what happened
/// (streams, results gathered for the owner), and the owner hears of it
/// after the session call returns, from copies of those buffers, so its
/// stored state is never accessed twice at once and the dynamic
/// exclusivity checks go (`@exclusivity(unchecked)`), as in `APNsPool`.
/// Callgrind put them at about 1,700 instructions per notification on the
/// provider path: the pool asks `canTake` and `state` of its connections
/// for every request it places, and each submit touched the state a dozen
/// times.
final class APNsConnection: IOHandler, HTTP2ClientSessionDelegate {
    private let loop: EventLoop
    private let endpoint: APNsEndpoint
    private weak var owner: (any APNsConnectionOwner)?
    @exclusivity(unchecked) private var machine = APNsConnectionMachine()

    @exclusivity(unchecked) private var socket: Socket?
    @exclusivity(unchecked) private var tls: TLSConnection?
    @exclusivity(unchecked) private var session: HTTP2ClientSession?
    /// Requests on this connection by stream id.
    @exclusivity(unchecked) private var streams: [Int32: PooledNotification] = [:]

    /// Frames between nghttp2 and OpenSSL, and the count of bytes OpenSSL
    /// accepted (what the server can have seen). Beyond 256 KiB pending,
    /// frames wait inside the session until the socket takes more.
    @exclusivity(unchecked) private var pump = HTTP2TLSPump(highWater: 256 * 1024, keptCapacity: 64 * 1024)
    /// Reads per pass before other descriptors get their turn.
    private static let readsPerPass = 64
    /// After a failed write, reads to get the server's last answers and its
    /// GOAWAY (bounded: a socket receive queue holds a few MB at most).
    private static let readsAfterWriteFailure = 4096
    /// Zero-delay passes scheduled and not yet run (`ZeroDelayPassHost`).
    @exclusivity(unchecked) var scheduledPasses: ZeroDelayPasses = []
    /// Submitted since frames were last taken from the session: the next
    /// frames taken carry them.
    @exclusivity(unchecked) private var unserialized: [PooledNotification] = []
    /// OpenSSL asked for writability to finish a read (TLS 1.3 key update).
    @exclusivity(unchecked) private var readWantsWrite = false
    /// The events epoll watches for the socket; nil while not registered.
    @exclusivity(unchecked) private var interest: IOEvents?

    private let readBuffer: UnsafeMutableRawBufferPointer
    private static let readBufferSize = 16 * 1024

    @exclusivity(unchecked) private var connectTimer: TimerID?
    @exclusivity(unchecked) private var pingTimer: TimerID?
    @exclusivity(unchecked) private var pingTimeoutTimer: TimerID?
    @exclusivity(unchecked) private var lastReadAt: UInt64 = 0
    @exclusivity(unchecked) private var pingPayload: UInt64 = 0

    /// Answers and returns gathered during `receive` (nghttp2 callbacks) and
    /// handed to the owner after it returns, so the owner's code never runs
    /// inside nghttp2.
    @exclusivity(unchecked) private var finishedRequests: [(PooledNotification, APNsDelivery)] = []
    /// `finishedRequests`' other buffer: the two take turns, so handing a
    /// batch over allocates nothing.
    @exclusivity(unchecked) private var spareFinishedRequests: [(PooledNotification, APNsDelivery)] = []
    @exclusivity(unchecked) private var unprocessedRequests: [PooledNotification] = []
    /// Since the last hand-over: the server's SETTINGS, a closed stream or a
    /// WINDOW_UPDATE may have made room for new requests.
    @exclusivity(unchecked) private var capacityChanged = false
    /// Since the last hand-over: the server's GOAWAY made this connection
    /// draining (the machine's `announceDraining`).
    @exclusivity(unchecked) private var becameDraining = false

    init(loop: EventLoop, endpoint: APNsEndpoint, owner: any APNsConnectionOwner) {
        self.loop = loop
        self.endpoint = endpoint
        self.owner = owner
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 1)
    }

    deinit {
        readBuffer.deallocate()
    }

    var state: APNsConnectionState { machine.state }

    /// New requests this connection takes now (0 unless ready).
    @inline(__always) var availableStreams: Int {
        guard machine.state == .ready, let session, !session.isGoingAway, session.failure == nil,
              pump.pendingBytes < pump.highWater else { return 0 }
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

    // MARK: Machine events and actions

    func start() {
        handle { $0.start(into: &$1) }
    }

    /// Graceful close: GOAWAY, open streams finish, then close.
    func drain() {
        handle { $0.drain(into: &$1) }
        checkDrained()
    }

    /// Hands one event to the machine and performs the actions it decides.
    private func handle(_ event: (inout APNsConnectionMachine, inout [APNsConnectionMachine.Action]) -> Void) {
        var actions: [APNsConnectionMachine.Action] = []
        event(&machine, &actions)
        perform(actions)
    }

    private func perform(_ actions: [APNsConnectionMachine.Action]) {
        for action in actions {
            switch action {
            case .resolve:
                Resolver.resolve(host: endpoint.host, port: endpoint.port, on: loop) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .success(let addresses): self.handle { $0.resolved(addresses, into: &$1) }
                    case .failure(let error): self.handle { $0.resolveFailed(error.description, into: &$1) }
                    }
                }
            case .armConnectTimeout:
                let timeout = endpoint.connectTimeout
                connectTimer = loop.schedule(after: timeout) { [weak self] in
                    guard let self else { return }
                    self.connectTimer = nil
                    self.handle { $0.connectTimedOut(after: "\(timeout)", into: &$1) }
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
            case .announceDraining:
                // Told after `receive` returns (`deliverResults`).
                becameDraining = true
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
            interest = .writable
            if progress == .connected { handle { $0.connected(into: &$1) } }
        } catch {
            handle { $0.connectFailed("\(address): \(error)", into: &$1) }
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
            handle { $0.failed(error.description, into: &$1) }
            return
        }
        continueHandshake()
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .complete:
            handle { $0.handshakeCompleted(alpn: tls.negotiatedALPN, into: &$1) }
        case .wantRead:
            setInterest(.readable)
        case .wantWrite:
            setInterest(.writable)
        case .closed:
            handle { $0.failed("server closed the connection during the TLS handshake", into: &$1) }
        case .failed(let error):
            handle { $0.failed(error.description, into: &$1) }
        }
    }

    private func startSession() {
        do {
            session = try HTTP2ClientSession(delegate: self)
        } catch {
            handle { $0.failed(error.description, into: &$1) }
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
        case submitted(streamID: Int32)
        /// The session takes no new stream (GOAWAY raced in): try elsewhere.
        case refused
        /// The request itself cannot go over HTTP/2 (a header it forbids):
        /// APNs never saw it and no other connection would take it.
        case unsendable(String)
    }

    /// Hands `request` to the session.
    func submit(_ request: PooledNotification) -> SubmitResult {
        guard machine.state == .ready, let session else { return .refused }
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
        request.earliestWireOffset = nil
        streams[streamID] = request
        unserialized.append(request)
        scheduleFlush()
        return .submitted(streamID: streamID)
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
        switch machine.machineState {
        case .connecting:
            guard let socket else { return }
            if let error = socket.pendingConnectError() {
                handle { $0.connectFailed(error.description, into: &$1) }
            } else if events.contains(.writable) || events.contains(.hangup) || events.contains(.error) {
                handle { $0.connected(into: &$1) }
            }
        case .handshakingTLS:
            continueHandshake()
        case .awaitingSettings, .ready, .draining:
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
    /// fairness, coming back on its own for input left inside OpenSSL).
    private func readAvailable() {
        guard let tls, let session else { return }
        let pass = HTTP2TLSPump.readAndFeed(session, from: tls, into: readBuffer, maxReads: Self.readsPerPass, host: self)
        if pass.receivedBytes { lastReadAt = loop.now }
        switch pass.stop {
        case .wantRead, .stoppedByHost:
            return
        case .wantWrite:
            readWantsWrite = true
            setInterest((interest ?? []).union(.writable))
        case .protocolError(let error):
            flushOutput()  // the GOAWAY nghttp2 queued, best effort
            handle { $0.failed("HTTP/2: \(error)", into: &$1) }
        case .closed:
            transportEnded("server closed the connection")
        case .failed(let error):
            transportEnded(error.description)
        case .yielded(let moreBuffered):
            if moreBuffered { scheduleZeroDelayPass(.readContinuation, on: loop) }
        }
    }

    /// A flush writes what was submitted in this event batch; a read
    /// continuation reads first. Both then hand results to the owner.
    func runZeroDelayPass(_ pass: ZeroDelayPasses) {
        if pass == .readContinuation { readAvailable() }
        flushOutput()
        afterEvents()
    }

    /// EOF, a reset, or a failed write once everything was read: the
    /// machine decides between the server's orderly close and a failure.
    private func transportEnded(_ reason: String) {
        handle { $0.transportEnded(reason, streamsLeft: streams.count, into: &$1) }
    }

    /// Takes frames from nghttp2 and writes them through OpenSSL until the
    /// socket is full or nothing is left.
    private func flushOutput() {
        guard let tls, let session, machine.state != .closed else { return }
        switch pump.write(session, through: tls, host: self) {
        case .flushed:
            setInterest(readWantsWrite ? [.readable, .writable] : .readable)
        case .wantWrite:
            setInterest([.readable, .writable])
        case .wantRead:
            // The write resumes after the next read (flushOutput runs
            // after every event batch).
            setInterest(.readable)
        case .closed:
            writeFailed("server closed the connection")
        case .failed(let error):
            writeFailed(error.description)
        }
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
        if let tls, let session {
            let pass = HTTP2TLSPump.readAndFeed(session, from: tls, into: readBuffer,
                                                maxReads: Self.readsAfterWriteFailure, host: self)
            if case .protocolError(let error) = pass.stop {
                handle { $0.failed("HTTP/2: \(error)", into: &$1) }
                return
            }
        }
        // GOAWAY read and everything owed answered: the server's orderly
        // close, as when readAvailable meets EOF.
        transportEnded(reason)
    }

    private func scheduleFlush() {
        guard machine.state != .closed else { return }
        scheduleZeroDelayPass(.flush, on: loop)
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
            if machine.state == .ready { owner.connectionHasCapacity(self) }
        }
    }

    /// Our drain or the server's GOAWAY left no stream open: close.
    private func checkDrained() {
        guard machine.state == .draining, streams.isEmpty else { return }
        if let session, session.wantsWrite { flushOutput() }
        guard machine.state == .draining else { return }
        handle { $0.drained(into: &$1) }
    }

    private func setInterest(_ wanted: IOEvents) {
        guard let interest, let socket, wanted != interest else { return }
        self.interest = wanted
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
        // The timer is cancelled at the close; a pass that already fired finds nothing to check.
        guard machine.state == .ready || machine.state == .draining, let session else { return }
        let interval = endpoint.pingInterval.saturatingNanoseconds
        if loop.now &- lastReadAt >= interval, pingTimeoutTimer == nil {
            pingPayload &+= 1
            do {
                try session.submitPing(payload: pingPayload)
            } catch {
                handle { $0.failed("cannot send PING: \(error)", into: &$1) }
                return
            }
            let timeout = endpoint.pingTimeout
            pingTimeoutTimer = loop.schedule(after: timeout) { [weak self] in
                guard let self else { return }
                self.pingTimeoutTimer = nil
                self.handle { $0.failed("no PING answer within \(timeout)", into: &$1) }
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
        if failure == nil, let session, let tls {
            // Orderly: push out the last frames and close_notify, best effort.
            pump.writeLast(session, through: tls, host: self)
            tls.shutdown()
        }
        // No close report comes for streams still open (RFC 9113 §6.8: those
        // above the GOAWAY's last-stream-id were never processed).
        let goAwayLastStreamID = session?.lastProcessedStreamID
        let detail = failure?.description ?? "connection closed"
        for (streamID, request) in streams.sorted(by: { $0.key < $1.key }) {
            if let last = goAwayLastStreamID, streamID > last {
                unprocessedRequests.append(request)
            } else if request.earliestWireOffset.map({ $0 >= pump.writtenTotal }) ?? true {
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
        pump.discardOutput()
        // Deferred: tearDown may run inside a caller's loop over connections.
        let wasReady = machine.wasReady
        deliverResults()
        owner?.connectionDidClose(self, failure: failure, wasReady: wasReady)
    }

    private func closeSocket() {
        guard let socket else { return }
        if interest != nil { loop.deregister(socket.fileDescriptor) }
        interest = nil
        socket.close()
        self.socket = nil
    }

    // MARK: HTTP2ClientSessionDelegate (inside `receive`/`takeOutput`)

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
        // Read only on an error answer: a 200 has nothing to wait for.
        if status != 200, let value = fields.value(for: "retry-after") {
            request.retryAfterSeconds = APNsDelivery.retryAfterSeconds(value[...].utf8)
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
        finishedRequests.append((request, APNsDelivery(status: status, apnsID: request.responseAPNsID, body: request.body,
                                                            retryAfterSeconds: request.retryAfterSeconds)))
    }

    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {
        capacityChanged = true
        handle { $0.settingsReceived(into: &$1) }
    }

    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32,
                 errorCode: HTTP2ErrorCode, debugData: String) {
        var actions: [APNsConnectionMachine.Action] = []
        machine.goAwayReceived(into: &actions)
        if case .close = actions.last {
            // A close decided here waits until `receive` returns (tearDown
            // frees the session, which must not happen inside its own callback).
            loop.schedule(after: .zero) { [weak self] in self?.perform(actions) }
        } else {
            perform(actions)
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

// MARK: HTTP2TLSPumpHost

extension APNsConnection: HTTP2TLSPumpHost, ZeroDelayPassHost {
    var keepsReading: Bool { machine.state != .closed }

    /// The requests submitted since frames were last taken begin in these
    /// frames, at `offset` at the earliest.
    func framesSerialized(at offset: UInt64) {
        guard !unserialized.isEmpty else { return }
        for request in unserialized { request.earliestWireOffset = offset }
        unserialized.removeAll(keepingCapacity: true)
    }
}
