import EventLoop
import HTTP2
import HTTP2Transport
import TLS

// One HTTP/2 client connection, in four files by what they hold: its state, the
// machine's actions, the handshake, the idle PING and the teardown (here);
// the requests handed to it (+Requests); the read and write passes
// (+IO); what the nghttp2 session reports (+SessionEvents). The pieces
// that stand alone live elsewhere: the lifecycle decisions in
// HTTP2ConnectionMachine, the byte pump in HTTP2Transport, the request in
// PooledRequest (and the service's subclass of it).

/// One HTTP/2 connection of a pool: moves bytes between the socket, OpenSSL and
/// the nghttp2 session (through `HTTP2TLSPump`), and performs what
/// `HTTP2ConnectionMachine` decides.
///
/// Confined to its loop; nghttp2's callbacks only record what happened
/// (streams, results gathered for the owner), and the owner hears of it
/// after the session call returns, from copies of those buffers, so its
/// stored state is never accessed twice at once and the dynamic
/// exclusivity checks go (`@exclusivity(unchecked)`), as in `HTTP2Pool`.
/// Callgrind put them at about 1,700 instructions per notification on the
/// provider path: the pool asks `canTake` and `state` of its connections
/// for every request it places, and each submit touched the state a dozen
/// times.
final class HTTP2Connection: IOHandler {
    let loop: EventLoop
    let endpoint: HTTP2Endpoint
    weak var owner: (any HTTP2ConnectionOwner)?
    @exclusivity(unchecked) var machine = HTTP2ConnectionMachine()

    @exclusivity(unchecked) var socket: Socket?
    @exclusivity(unchecked) var tls: TLSConnection?
    @exclusivity(unchecked) var session: HTTP2ClientSession?
    /// Requests on this connection by stream id.
    @exclusivity(unchecked) var streams: [Int32: PooledRequest] = [:]

    /// Frames between nghttp2 and OpenSSL, and the count of bytes OpenSSL
    /// accepted (what the server can have seen). Beyond 256 KiB pending,
    /// frames wait inside the session until the socket takes more.
    @exclusivity(unchecked) var pump = HTTP2TLSPump(highWater: 256 * 1024, keptCapacity: 64 * 1024)
    /// Reads per pass before other descriptors get their turn.
    static let readsPerPass = 64
    /// After a failed write, reads to get the server's last answers and its
    /// GOAWAY (bounded: a socket receive queue holds a few MB at most).
    static let readsAfterWriteFailure = 4096
    /// Zero-delay passes scheduled and not yet run (`ZeroDelayPassHost`).
    @exclusivity(unchecked) var scheduledPasses: ZeroDelayPasses = []
    /// Submitted since frames were last taken from the session: the next
    /// frames taken carry them.
    @exclusivity(unchecked) var unserialized: [PooledRequest] = []
    /// OpenSSL asked for writability to finish a read (TLS 1.3 key update).
    @exclusivity(unchecked) var readWantsWrite = false
    /// The events epoll watches for the socket; nil while not registered.
    @exclusivity(unchecked) var interest: IOEvents?

    let readBuffer: UnsafeMutableRawBufferPointer
    private static let readBufferSize = 16 * 1024

    @exclusivity(unchecked) private var connectTimer: TimerID?
    @exclusivity(unchecked) private var pingTimer: TimerID?
    @exclusivity(unchecked) var pingTimeoutTimer: TimerID?
    @exclusivity(unchecked) var lastReadAt: UInt64 = 0
    @exclusivity(unchecked) private var pingPayload: UInt64 = 0

    /// Answers and returns gathered during `receive` (nghttp2 callbacks) and
    /// handed to the owner after it returns, so the owner's code never runs
    /// inside nghttp2.
    @exclusivity(unchecked) var finishedRequests: [(PooledRequest, PooledAnswer)] = []
    /// `finishedRequests`' other buffer: the two take turns, so handing a
    /// batch over allocates nothing.
    @exclusivity(unchecked) var spareFinishedRequests: [(PooledRequest, PooledAnswer)] = []
    @exclusivity(unchecked) var unprocessedRequests: [PooledRequest] = []
    /// Since the last hand-over: the server's SETTINGS, a closed stream or a
    /// WINDOW_UPDATE may have made room for new requests.
    @exclusivity(unchecked) var capacityChanged = false
    /// Since the last hand-over: the server's GOAWAY made this connection
    /// draining (the machine's `announceDraining`).
    @exclusivity(unchecked) var becameDraining = false

    init(loop: EventLoop, endpoint: HTTP2Endpoint, owner: any HTTP2ConnectionOwner) {
        self.loop = loop
        self.endpoint = endpoint
        self.owner = owner
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 1)
    }

    deinit {
        readBuffer.deallocate()
    }

    var state: HTTP2ConnectionState { machine.state }

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
    /// §6.9.1). A server need not say how large that window is (APNs does
    /// not); at the 65,535 bytes a connection starts with, two dozen
    /// notifications fill it, and nghttp2 would share what the server frees
    /// among every body queued behind it, so all of them would finish late
    /// (measured against APNs' emulator: p99 0.3-0.6 s at 512 senders). Waiting in the pool's queue keeps them in order and
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
    func handle(_ event: (inout HTTP2ConnectionMachine, inout [HTTP2ConnectionMachine.Action]) -> Void) {
        var actions: [HTTP2ConnectionMachine.Action] = []
        event(&machine, &actions)
        perform(actions)
    }

    func perform(_ actions: [HTTP2ConnectionMachine.Action]) {
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

    func continueHandshake() {
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
                finishedRequests.append((request, .failed(.streamFailed("connection lost: \(detail)"))))
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
}
