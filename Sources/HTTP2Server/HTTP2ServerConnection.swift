import EventLoop
import HTTP1
import HTTP2
import HTTPCore
import TLS

/// One HTTP/2 connection of a listener (plain h2c or over TLS): moves bytes
/// between the socket and its `HTTP2ServerSession`, hands each complete
/// request to the listener's handler, and submits the answers as they come
/// (in any order). What to do when is `HTTP2ServerConnectionMachine`'s; frames
/// are nghttp2's. Confined to its loop.
final class HTTP2ServerConnection: IOHandler, HTTP2ServerSessionDelegate, SwitchedConnection {
    private let socket: Socket
    private let tls: TLSConnection?
    private let loop: EventLoop
    private let handler: any HTTP1RequestHandler
    private let counters: HTTP1ListenerCounters
    private let owner: any SwitchedConnectionOwner
    private let options: ListenerOptions
    private var machine: HTTP2ServerConnectionMachine
    private var actions: [HTTP2ServerConnectionMachine.Action] = []
    private var session: HTTP2ServerSession?
    private let clientCertificateSHA256: [UInt8]?
    /// Read before the switch (the preface at least); fed at start.
    private var bufferedInput: [UInt8]
    /// Frames taken from the session; `output[written...]` not yet written.
    private var output: [UInt8] = []
    private var written = 0
    private var readBuffer: [UInt8]
    private var timer: TimerID?
    private var writeTimer: TimerID?
    private var resetsSeen = 0
    private var requestsCompleted = 0
    private var closeWhenFlushed = false
    private var readPassScheduled = false
    private(set) var isClosed = false
    /// Reads per readiness event, for fairness between connections.
    private static let readsPerWakeup = 16

    init(_ handoff: ConnectionHandoff, limits: HTTP2ServerLimits) {
        socket = handoff.socket
        tls = handoff.tls
        loop = handoff.loop
        handler = handoff.handler
        counters = handoff.counters
        owner = handoff.owner
        options = handoff.options
        bufferedInput = handoff.bufferedInput
        clientCertificateSHA256 = handoff.tls?.verifiedPeerCertificateSHA256
        machine = HTTP2ServerConnectionMachine(timeouts: handoff.options.timeouts, limits: limits)
        readBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    }

    func start() {
        let limits = machine.limits
        do {
            session = try HTTP2ServerSession(
                delegate: self, maxConcurrentStreams: limits.maxConcurrentStreams,
                maxRequestBodySize: options.limits.maxBodyBytes, maxHeaderListSize: options.limits.maxHeaderBytes,
                connectionWindowSize: limits.connectionWindow)
            try loop.register(socket.fileDescriptor, interest: .readable, handler: self)
        } catch {
            close()
            return
        }
        let input = bufferedInput
        bufferedInput = []
        input.withUnsafeBytes { feed($0) }
        // What followed may wait inside OpenSSL already, where epoll does
        // not see it: read once now.
        readAvailable()
    }

    // MARK: reading

    func handleIO(_ events: IOEvents) {
        guard !isClosed else { return }
        if events.contains(.error) || (events.contains(.hangup) && !events.contains(.readable)) {
            close()
            return
        }
        if events.contains(.writable) { flush() }
        if !isClosed && (events.contains(.readable) || events.contains(.hangup)) { readAvailable() }
    }

    private var readsInput: Bool {
        !closeWhenFlushed && output.count - written < machine.limits.outputHighWater && session?.wantsRead == true
    }

    private func readAvailable() {
        var reads = 0
        while reads < Self.readsPerWakeup && readsInput && !isClosed {
            reads += 1
            let result: ReadResult = readBuffer.withUnsafeMutableBytes { buffer in
                guard let tls else { return socket.read(into: buffer) }
                switch tls.read(into: buffer) {
                case .bytes(let count): return .bytes(count)
                case .wantRead, .wantWrite: return .wouldBlock
                case .closed: return .endOfFile
                case .failed: return .failed(0)
                }
            }
            switch result {
            case .bytes(let count):
                readBuffer.withUnsafeBytes { feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                if let tls, !tls.hasBufferedReadData { reads = Self.readsPerWakeup }
            case .wouldBlock:
                reads = Self.readsPerWakeup
            case .endOfFile, .failed:
                // The peer is gone: what it asked can no longer reach it.
                close()
                return
            }
        }
        afterInput()
    }

    /// Decrypted bytes OpenSSL holds are invisible to epoll: when reading
    /// stopped with some there (the pass's bound, or back-pressure that has
    /// since eased), come back for them on the next loop iteration.
    private func resumeBufferedReads() {
        guard let tls, !readPassScheduled, readsInput, tls.hasBufferedReadData else { return }
        readPassScheduled = true
        _ = loop.schedule(after: .zero) { [weak self] in
            guard let self else { return }
            self.readPassScheduled = false
            if !self.isClosed { self.readAvailable() }
        }
    }

    private func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let session, !bytes.isEmpty, !machine.isClosing else { return }
        do {
            try session.receive(bytes)
        } catch {
            // nghttp2 queued the GOAWAY that says why (RFC 9113 §5.4.1).
            machine.sessionEnded(into: &actions)
        }
    }

    /// The machine looks at the streams after input or answers.
    private func afterInput(progressed: Bool? = nil) {
        guard !isClosed, let session else { return }
        let received = session.resetsReceived
        if received > resetsSeen {
            machine.resetsReceived(received - resetsSeen, now: loop.now, into: &actions)
            resetsSeen = received
        }
        if session.failure != nil || (!session.wantsRead && !session.wantsWrite) {
            machine.sessionEnded(into: &actions)
        }
        machine.streamsChanged(open: session.activeStreamCount, incomplete: session.incompleteRequestCount,
                               progressed: progressed ?? (requestsCompleted > 0), into: &actions)
        requestsCompleted = 0
        performActions()
        flush()
    }

    // MARK: HTTP2ServerSessionDelegate

    func session(_ session: HTTP2ServerSession, didReceiveRequest request: HTTP2Request) {
        requestsCompleted += 1
        counters.recordAnswer()
        let streamID = request.streamID
        let isHead = request.method == "HEAD"
        let converted = HTTP2Exchange.request(request, clientCertificateSHA256: clientCertificateSHA256)
        let immediate = handler.handle(converted) { [weak self] response in
            self?.answer(streamID: streamID, isHead: isHead, response, later: true)
        }
        if let immediate { answer(streamID: streamID, isHead: isHead, immediate, later: false) }
    }

    func session(_ session: HTTP2ServerSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {}

    /// `later`: from the handler's completion, outside any session call.
    private func answer(streamID: Int32, isHead: Bool, _ response: HTTP1Response, later: Bool) {
        guard !isClosed, let session else { return }
        // A stream the client reset meanwhile, or one beyond our GOAWAY:
        // nothing to answer.
        try? session.submitResponse(streamID: streamID, status: response.status,
                                    headers: HTTP2Exchange.responseFields(response),
                                    body: isHead ? [] : response.body)
        if later { afterInput(progressed: false) }
    }

    // MARK: actions

    private func performActions() {
        var index = 0
        while index < actions.count {
            let action = actions[index]
            index += 1
            switch action {
            case .armTimer(let kind, let delay):
                if let timer { loop.cancel(timer) }
                timer = loop.schedule(after: delay) { [weak self] in
                    guard let self else { return }
                    self.timer = nil
                    self.machine.timerFired(kind, into: &self.actions)
                    self.performActions()
                    self.flush()
                }
            case .cancelTimer:
                if let timer { loop.cancel(timer) }
                timer = nil
            case .goAway:
                try? session?.submitGoAway()
            case .terminate(let code):
                try? session?.terminate(errorCode: code)
            case .closeAfterFlush:
                closeWhenFlushed = true
            }
        }
        actions.removeAll(keepingCapacity: true)
    }

    // MARK: writing

    /// Takes frames from the session up to the high-water mark and writes
    /// what the socket takes; closes when the machine said so and all is out.
    private func flush() {
        guard !isClosed, let session else { return }
        while true {
            if written == output.count {
                output.removeAll(keepingCapacity: output.capacity <= machine.limits.outputHighWater)
                written = 0
            }
            if output.count - written < machine.limits.outputHighWater { session.takeOutput(into: &output) }
            guard written < output.count else { break }
            let result: WriteResult = output.withUnsafeBytes { bytes in
                let pending = UnsafeRawBufferPointer(rebasing: bytes[written...])
                guard let tls else { return socket.write(pending) }
                switch tls.write(pending) {
                case .bytes(let count): return .bytes(count)
                case .wantRead, .wantWrite: return .wouldBlock
                case .closed, .failed: return .failed(0)
                }
            }
            switch result {
            case .bytes(let count):
                written += count
                continue
            case .wouldBlock:
                break
            case .failed:
                close()
                return
            }
            break
        }
        let pending = written < output.count
        if pending {
            // A peer that stops reading gets the body timeout to take the
            // rest, as on HTTP/1.1; then the connection closes.
            if writeTimer == nil {
                writeTimer = loop.schedule(after: options.timeouts.body) { [weak self] in
                    self?.writeTimer = nil
                    self?.close()
                }
            }
        } else {
            if let writeTimer { loop.cancel(writeTimer) }
            writeTimer = nil
            if closeWhenFlushed || (!session.wantsRead && !session.wantsWrite) {
                tls?.shutdown()
                close()
                return
            }
        }
        var interest: IOEvents = pending ? .writable : []
        if readsInput { interest.insert(.readable) }
        if loop.interest(of: socket.fileDescriptor) != interest { loop.setInterest(socket.fileDescriptor, interest) }
        resumeBufferedReads()
    }

    // MARK: SwitchedConnection

    func shutdown() {
        guard !isClosed, let session else { return }
        machine.shutdown(open: session.activeStreamCount, into: &actions)
        performActions()
        flush()
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        if let timer { loop.cancel(timer) }
        if let writeTimer { loop.cancel(writeTimer) }
        timer = nil
        writeTimer = nil
        loop.deregister(socket.fileDescriptor)
        socket.close()
        owner.switchedConnectionClosed(self)
    }
}
