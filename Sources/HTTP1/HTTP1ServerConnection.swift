import EventLoop
import Glibc
import HTTPCore
import TLS

/// One sender connection on an event loop: moves bytes between the socket
/// (plain, or TLS once the non-blocking handshake is done) and the
/// `HTTP1ConnectionMachine`, and carries out the machine's actions. All
/// protocol decisions are the machine's; this class only does I/O.
/// Confined to its loop, and its machine's actions are carried out one run
/// at a time (`performing`): its stored state is never accessed twice at
/// once, so the dynamic exclusivity checks go (`@exclusivity(unchecked)`);
/// callgrind put them at about 4,000 instructions per request.
final class HTTP1ServerConnection: IOHandler {
    private let socket: Socket
    private let loop: EventLoop
    private let handler: HTTP1RequestHandler
    private let counters: HTTP1ListenerCounters
    private let owner: ConnectionOwner
    @exclusivity(unchecked) private var machine: HTTP1ConnectionMachine
    /// The machine's actions still to carry out, from `nextAction` on. One
    /// array for the connection's life: the machine appends to it, and it is
    /// emptied (keeping its capacity) once carried out.
    @exclusivity(unchecked) private var actions: [HTTP1ConnectionMachine.Action] = []
    @exclusivity(unchecked) private var nextAction = 0
    @exclusivity(unchecked) private var performing = false
    @exclusivity(unchecked) private var input: InputBuffer
    /// Plain connections write through the queue (one sendmsg for many
    /// chunks); TLS connections write the same chunks through OpenSSL.
    @exclusivity(unchecked) private var output = OutputQueue()
    @exclusivity(unchecked) private var tlsPending: [[UInt8]] = []
    @exclusivity(unchecked) private var tlsPendingOffset = 0
    private let tls: TLSConnection?
    @exclusivity(unchecked) private var handshaking: Bool
    /// The machine's one timer, kept lazily: `timerDeadline` is when it is
    /// due (nil: cancelled); `timer` is the loop timer behind it, which may
    /// be due earlier and then re-arms for the rest. Re-arming and cancelling
    /// (twice per request: header, then keep-alive) only move the deadline,
    /// instead of a heap insert, a closure and a cancel each time.
    @exclusivity(unchecked) private var timer: TimerID?
    @exclusivity(unchecked) private var timerScheduledAt: UInt64 = 0
    @exclusivity(unchecked) private var timerDeadline: UInt64?
    @exclusivity(unchecked) private var timerKind: HTTP1ConnectionMachine.TimerKind = .header
    @exclusivity(unchecked) private var lingerTimer: TimerID?
    @exclusivity(unchecked) private var writeTimer: TimerID?
    @exclusivity(unchecked) private var peerEOF = false
    /// After the last response: the write side is shut, input is read and
    /// dropped until EOF, so closing does not reset the connection before
    /// the peer has read the answer (RFC 9112 §9.6).
    @exclusivity(unchecked) private var lingering = false
    @exclusivity(unchecked) private(set) var isClosed = false
    /// The other protocol the connection may switch to, and whether its
    /// first bytes are still to be compared with that protocol's preface
    /// (false from the start without one: the Web Push port never looks).
    private let protocolSwitch: (any ProtocolSwitch)?
    @exclusivity(unchecked) private var sniffing: Bool
    /// The verified client certificate's SHA-256 (TLS), set on every request.
    @exclusivity(unchecked) private var clientCertificateSHA256: [UInt8]?
    /// How the closures the loop and the relay hold reach this connection
    /// without keeping it alive, and the two they get on every request,
    /// made once (a closure per request cost an allocation).
    private let reference: ConnectionReference
    private let answerCallback: (HTTP1Response) -> Void
    private let timerCallback: () -> Void
    /// Guards the loop against processing events for one connection forever.
    private static let readsPerWakeup = 16
    private static let lingerTime: Duration = .seconds(2)

    init(socket: Socket, loop: EventLoop, tls: TLSConnection?, machine: HTTP1ConnectionMachine,
         inputLimit: Int, handler: HTTP1RequestHandler, counters: HTTP1ListenerCounters, owner: ConnectionOwner,
         protocolSwitch: (any ProtocolSwitch)? = nil) {
        self.socket = socket
        self.protocolSwitch = protocolSwitch
        self.sniffing = protocolSwitch != nil
        self.loop = loop
        self.tls = tls
        self.handshaking = tls != nil
        self.machine = machine
        self.input = InputBuffer(initialCapacity: 2048, limit: inputLimit)
        self.handler = handler
        self.counters = counters
        self.owner = owner
        let reference = ConnectionReference()
        self.reference = reference
        answerCallback = { response in reference.connection?.answer(response) }
        timerCallback = { reference.connection?.loopTimerFired() }
        actions.reserveCapacity(8)
        reference.connection = self
    }

    deinit {
        reference.connection = nil
    }

    /// Registers with the loop and starts the header timer. False when the
    /// loop refused the descriptor (the connection is then closed).
    func start() -> Bool {
        do {
            try loop.register(socket.fileDescriptor, interest: .readable, handler: self)
        } catch {
            isClosed = true
            socket.close()
            return false
        }
        handle { $0.start(into: &$1) }
        return true
    }

    var isIdle: Bool { machine.isIdle }

    func handleIO(_ events: IOEvents) {
        guard !isClosed else { return }
        if events.contains(.error) || (events.contains(.hangup) && !events.contains(.readable)) {
            // Both directions are gone: nothing can be delivered any more.
            close()
            return
        }
        if handshaking {
            continueHandshake()
            return
        }
        if events.contains(.writable) { flush() }
        if !isClosed && (events.contains(.readable) || events.contains(.hangup)) { readAvailable() }
    }

    // MARK: reading

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .complete:
            handshaking = false
            clientCertificateSHA256 = tls.verifiedPeerCertificateSHA256
            if let protocolSwitch, let alpn = tls.negotiatedALPN {
                // ALPN decided (RFC 7301): no sniffing.
                sniffing = false
                if alpn == protocolSwitch.alpnIdentifier {
                    switchProtocol()
                    return
                }
            }
            updateInterest()
            readAvailable()
        case .wantRead: loop.setInterest(socket.fileDescriptor, .readable)
        case .wantWrite: loop.setInterest(socket.fileDescriptor, .writable)
        case .closed, .failed: close()
        }
    }

    private func readAvailable() {
        var reads = 0
        var failed = false
        while reads < Self.readsPerWakeup && !peerEOF {
            reads += 1
            let result: InputBuffer.FillResult
            if let tls {
                result = input.fill { buffer in
                    switch tls.read(into: buffer) {
                    case .bytes(let count): return .bytes(count)
                    case .wantRead, .wantWrite: return .wouldBlock
                    case .closed: return .endOfFile
                    case .failed: return .failed(EPROTO)
                    }
                }
            } else {
                result = input.read(from: socket)
            }
            switch result {
            case .bytes:
                if lingering { input.consume(input.readableCount) }
                if let tls {
                    if tls.hasBufferedReadData { continue }
                    // TLS without buffered bytes: the next read would block.
                    reads = Self.readsPerWakeup
                } else if !input.lastReadFilledSpace {
                    // A short read emptied the socket (level-triggered epoll
                    // reports anything that arrives later, EOF included).
                    reads = Self.readsPerWakeup
                }
            case .wouldBlock, .full:
                reads = Self.readsPerWakeup
            case .endOfFile:
                peerEOF = true
            case .failed:
                failed = true
                reads = Self.readsPerWakeup
            }
        }
        if failed {
            close()
            return
        }
        if lingering {
            if peerEOF { close() }
            return
        }
        if sniffing && !peerEOF && awaitsPreface() { return }
        if machine.wantsInput {
            handle { machine, actions in input.withReadableBytes { machine.bytesAvailable($0, into: &actions) } }
        }
        if peerEOF && !isClosed { handle { $0.peerClosed(into: &$1) } }
        if !isClosed { updateInterest() }
    }

    // MARK: switching protocol

    /// Compares the first bytes with the other protocol's preface: true
    /// while they match it (the connection switched, or waits for more of
    /// it); false once one differs (HTTP/1.1 from then on).
    @inline(never)
    private func awaitsPreface() -> Bool {
        guard let preface = protocolSwitch?.preface else { return false }
        let verdict: Bool? = input.withReadableBytes { bytes in
            for (index, byte) in bytes.prefix(preface.count).enumerated() where byte != preface[index] { return false }
            return bytes.count >= preface.count ? true : nil
        }
        switch verdict {
        case false?:
            sniffing = false
            return false
        case true?:
            switchProtocol()
            return true
        case nil:
            updateInterest()
            return true
        }
    }

    /// Hands the socket, the TLS connection and the bytes read so far to
    /// the other protocol; this connection is done without closing them.
    @inline(never)
    private func switchProtocol() {
        sniffing = false
        isClosed = true
        if let timer { loop.cancel(timer) }
        timer = nil
        timerDeadline = nil
        loop.deregister(socket.fileDescriptor)
        let buffered = input.withReadableBytes { Array($0) }
        owner.connectionSwitchesProtocol(self, socket: socket, tls: tls, bufferedInput: buffered)
    }

    // MARK: actions

    /// Lets the machine take one event, then carries out what it decided.
    private func handle(_ event: (inout HTTP1ConnectionMachine, inout [HTTP1ConnectionMachine.Action]) -> Void) {
        event(&machine, &actions)
        performActions()
    }

    /// Carries out the queued actions in order, with those they lead to (an
    /// answer known at once, the next pipelined request once a write completes).
    private func performActions() {
        // Never nested today; were it, the outer loop carries out what was added.
        guard !performing else { return }
        performing = true
        defer {
            performing = false
            actions.removeAll(keepingCapacity: true)
            nextAction = 0
        }
        while nextAction < actions.count && !isClosed {
            // Moved out, not copied: a copy retains (and later releases)
            // every buffer of a dispatched request.
            var action = HTTP1ConnectionMachine.Action.cancelTimer
            swap(&action, &actions[nextAction])
            nextAction += 1
            switch action {
            case .send(let bytes):
                if tls != nil { tlsPending.append(bytes) } else { output.append(bytes) }
            case .consume(let count):
                input.consume(count)
            case .dispatch(let request):
                counters.recordAnswer()
                let immediate = clientCertificateSHA256 == nil ? handler.handle(request, completion: answerCallback)
                    : handleIdentified(request)
                if let response = immediate {
                    let hasBufferedInput = !input.isEmpty
                    machine.responseReady(response, hasBufferedInput: hasBufferedInput, into: &actions)
                }
            case .armTimer(let kind, let delay):
                armTimer(kind, after: delay)
            case .refused(let status, let reason):
                handler.logRefusal(status: status, reason: reason)
            case .cancelTimer:
                // Lazy: a loop timer still pending finds no deadline and stops.
                timerDeadline = nil
            case .close:
                closeGracefully()
                return
            }
            if nextAction == actions.count, hasPendingOutput || machine.isWriting {
                // Write what is queued; once it is out, the machine may
                // move on (keep-alive, the next pipelined request, close).
                if writeOut() {
                    input.withReadableBytes { machine.writeCompleted(buffered: $0, into: &actions) }
                }
            }
        }
        if !isClosed { updateInterest() }
    }

    /// A request on a TLS connection whose client certificate verified
    /// carries its SHA-256; kept out of `performActions` (the common case
    /// is none).
    @inline(never)
    private func handleIdentified(_ request: HTTP1Request) -> HTTP1Response? {
        var identified = request
        identified.clientCertificateSHA256 = clientCertificateSHA256
        return handler.handle(identified, completion: answerCallback)
    }

    private func armTimer(_ kind: HTTP1ConnectionMachine.TimerKind, after delay: Duration) {
        let deadline = EventLoop.deadline(after: delay, from: loop.now)
        timerKind = kind
        timerDeadline = deadline
        // A pending loop timer due no later than the new deadline will
        // re-arm itself when it fires; an earlier deadline needs a new one.
        if timer != nil && timerScheduledAt <= deadline { return }
        scheduleLoopTimer(at: deadline)
    }

    private func scheduleLoopTimer(at deadline: UInt64) {
        if let timer { loop.cancel(timer) }
        timerScheduledAt = deadline
        timer = loop.schedule(atNanoseconds: deadline, timerCallback)
    }

    private func loopTimerFired() {
        timer = nil
        guard !isClosed, let deadline = timerDeadline else { return }
        if loop.now < deadline {
            scheduleLoopTimer(at: deadline)
            return
        }
        timerDeadline = nil
        // No 408 through a TLS handshake that never finished.
        if handshaking {
            close()
            return
        }
        let kind = timerKind
        handle { $0.timerFired(kind, into: &$1) }
    }

    private func answer(_ response: HTTP1Response) {
        guard !isClosed else { return }
        let hasBufferedInput = !input.isEmpty
        handle { $0.responseReady(response, hasBufferedInput: hasBufferedInput, into: &$1) }
    }

    // MARK: writing

    private var hasPendingOutput: Bool { tls != nil ? !tlsPending.isEmpty : !output.isEmpty }

    /// Writes as much as the socket takes; true when everything is out. A
    /// peer that stops reading gets the body timeout to take the rest, then
    /// the connection closes (otherwise it would be held forever).
    private func writeOut() -> Bool {
        let done = writeSome()
        if done {
            if let writeTimer { loop.cancel(writeTimer) }
            writeTimer = nil
        } else if writeTimer == nil && !isClosed {
            writeTimer = loop.schedule(after: machine.timeouts.body) { [reference] in
                reference.connection?.writeTimer = nil
                reference.connection?.close()
            }
        }
        return done
    }

    private func writeSome() -> Bool {
        if let tls {
            while let first = tlsPending.first {
                let result = first.withUnsafeBytes { bytes in
                    tls.write(UnsafeRawBufferPointer(rebasing: bytes[tlsPendingOffset...]))
                }
                switch result {
                case .bytes(let count):
                    tlsPendingOffset += count
                    if tlsPendingOffset >= first.count {
                        tlsPending.removeFirst()
                        tlsPendingOffset = 0
                    }
                case .wantRead, .wantWrite:
                    return false
                case .closed, .failed:
                    close()
                    return false
                }
            }
            return true
        }
        switch output.write(to: socket) {
        case .flushed: return true
        case .wouldBlock: return false
        case .failed:
            close()
            return false
        }
    }

    private func flush() {
        guard hasPendingOutput else { return }
        if writeOut() && !isClosed {
            handle { machine, actions in input.withReadableBytes { machine.writeCompleted(buffered: $0, into: &actions) } }
        }
    }

    private func updateInterest() {
        guard !isClosed, !handshaking else { return }
        var interest: IOEvents = []
        // Keep reading while waiting for an answer too (a pipelined request
        // may arrive, and EOF must be seen), until the buffer is full.
        if !peerEOF && !input.isFull && (!machine.isWriting || lingering) { interest.insert(.readable) }
        if hasPendingOutput { interest.insert(.writable) }
        if loop.interest(of: socket.fileDescriptor) != interest {
            loop.setInterest(socket.fileDescriptor, interest)
        }
    }

    // MARK: shutdown and close

    /// Graceful shutdown of the relay: see `HTTP1ConnectionMachine.shutdown`.
    func shutdown() {
        guard !isClosed else { return }
        handle { $0.shutdown(into: &$1) }
    }

    /// The machine is done with the connection: half-close and linger so
    /// the last response is not destroyed by a reset, then close.
    private func closeGracefully() {
        if let timer { loop.cancel(timer) }
        timer = nil
        timerDeadline = nil
        guard machine.closedAfterResponse && !peerEOF else {
            close()
            return
        }
        lingering = true
        tls?.shutdown()
        try? socket.shutdownWrite()
        input.consume(input.readableCount)
        lingerTimer = loop.schedule(after: Self.lingerTime) { [reference] in reference.connection?.close() }
        updateInterest()
    }

    /// Closes now. Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if let timer { loop.cancel(timer) }
        if let lingerTimer { loop.cancel(lingerTimer) }
        if let writeTimer { loop.cancel(writeTimer) }
        timer = nil
        lingerTimer = nil
        writeTimer = nil
        loop.deregister(socket.fileDescriptor)
        socket.close()
        owner.connectionClosed(self)
    }
}

/// A reference to a connection for the closures the loop and the relay hold
/// (timers, the answer callback): it neither keeps the connection alive nor,
/// unlike `weak`, gives the connection a side table. (Once an object has a
/// weak reference, every retain and release of it takes the runtime's slow
/// path, and each weak load costs more than the rest of the callback: about
/// 1 % of the relay's CPU at 512 senders.) The connection sets it in init and
/// clears it in deinit. Every read is on the connection's loop thread, and
/// what keeps the connection alive (its registration with the loop, its
/// owner's table) lets go of it on that thread too, or after the loop has
/// stopped: a read sees either the live connection or nil, never a freed one.
final class ConnectionReference {
    unowned(unsafe) var connection: HTTP1ServerConnection?
}

/// Who keeps a connection's registration: told once when it closes.
protocol ConnectionOwner: AnyObject {
    func connectionClosed(_ connection: HTTP1ServerConnection)
    /// `connection` is done and hands what it had to the other protocol.
    func connectionSwitchesProtocol(_ connection: HTTP1ServerConnection, socket: Socket, tls: TLSConnection?,
                                    bufferedInput: [UInt8])
}
