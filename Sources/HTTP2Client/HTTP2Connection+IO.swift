import EventLoop
import HTTP2Transport

// A pool connection's read and write passes: bytes between the socket,
// OpenSSL and the nghttp2 session, and the results they gather handed to
// the owner after each batch of events.

extension HTTP2Connection {
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
    func readAvailable() {
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
    func flushOutput() {
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

    func scheduleFlush() {
        guard machine.state != .closed else { return }
        scheduleZeroDelayPass(.flush, on: loop)
    }

    /// Hands gathered results to the owner and closes a drained connection.
    func afterEvents() {
        deliverResults()
        checkDrained()
    }

    func deliverResults() {
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
            for (request, answer) in finished { owner.connection(self, finished: request, with: answer) }
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
    func checkDrained() {
        guard machine.state == .draining, streams.isEmpty else { return }
        if let session, session.wantsWrite { flushOutput() }
        guard machine.state == .draining else { return }
        handle { $0.drained(into: &$1) }
    }

    func setInterest(_ wanted: IOEvents) {
        guard let interest, let socket, wanted != interest else { return }
        self.interest = wanted
        loop.setInterest(socket.fileDescriptor, wanted)
    }
}

// MARK: HTTP2TLSPumpHost

extension HTTP2Connection: HTTP2TLSPumpHost, ZeroDelayPassHost {
    var keepsReading: Bool { machine.state != .closed }

    /// The requests submitted since frames were last taken begin in these
    /// frames, at `offset` at the earliest.
    func framesSerialized(at offset: UInt64) {
        guard !unserialized.isEmpty else { return }
        for request in unserialized { request.earliestWireOffset = offset }
        unserialized.removeAll(keepingCapacity: true)
    }
}
