import EventLoop
import Testing
@testable import HTTP2Client

/// Each event as a function returning its actions: the machine appends to a
/// caller's array; tests compare whole lists.
extension HTTP2ConnectionMachine {
    typealias Step = (inout HTTP2ConnectionMachine, inout [Action]) -> Void

    mutating func collect(_ step: Step) -> [Action] {
        var actions: [Action] = []
        step(&self, &actions)
        return actions
    }

    mutating func start() -> [Action] { collect { $0.start(into: &$1) } }
    mutating func resolved(_ addresses: [SocketAddress]) -> [Action] { collect { $0.resolved(addresses, into: &$1) } }
    mutating func resolveFailed(_ reason: String) -> [Action] { collect { $0.resolveFailed(reason, into: &$1) } }
    mutating func connectFailed(_ reason: String) -> [Action] { collect { $0.connectFailed(reason, into: &$1) } }
    mutating func connected() -> [Action] { collect { $0.connected(into: &$1) } }
    mutating func handshakeCompleted(alpn: String?) -> [Action] { collect { $0.handshakeCompleted(alpn: alpn, into: &$1) } }
    mutating func settingsReceived() -> [Action] { collect { $0.settingsReceived(into: &$1) } }
    mutating func goAwayReceived() -> [Action] { collect { $0.goAwayReceived(into: &$1) } }
    mutating func drain() -> [Action] { collect { $0.drain(into: &$1) } }
    mutating func drained() -> [Action] { collect { $0.drained(into: &$1) } }
    mutating func transportEnded(_ reason: String, streamsLeft: Int) -> [Action] {
        collect { $0.transportEnded(reason, streamsLeft: streamsLeft, into: &$1) }
    }
    mutating func connectTimedOut(after timeout: String) -> [Action] { collect { $0.connectTimedOut(after: timeout, into: &$1) } }
    mutating func failed(_ reason: String) -> [Action] { collect { $0.failed(reason, into: &$1) } }
}

@Suite("HTTP/2 connection machine")
struct HTTP2ConnectionMachineTests {
    let first = SocketAddress(ip: "127.0.0.1", port: 443)!
    let second = SocketAddress(ip: "::1", port: 443)!

    @Test("the happy path: idle → resolving → connecting → handshaking → ready → draining → closed")
    func happyPath() {
        var machine = HTTP2ConnectionMachine()
        #expect(machine.state == .idle)
        #expect(machine.start() == [.armConnectTimeout, .resolve])
        #expect(machine.state == .resolving)
        #expect(machine.resolved([first, second]) == [.connect(first)])
        #expect(machine.state == .connecting)
        #expect(machine.connected() == [.startTLSHandshake])
        #expect(machine.state == .handshaking)
        #expect(machine.handshakeCompleted(alpn: "h2") == [.startHTTP2Session])
        #expect(machine.state == .handshaking)
        #expect(!machine.wasReady)
        #expect(machine.settingsReceived() == [.cancelConnectTimeout, .becameReady])
        #expect(machine.state == .ready)
        #expect(machine.wasReady)
        // Later SETTINGS change limits only.
        #expect(machine.settingsReceived() == [])
        #expect(machine.drain() == [.sendGoAway])
        #expect(machine.state == .draining)
        #expect(machine.drained() == [.close(nil)])
        #expect(machine.state == .closed)
        #expect(machine.start() == [])
    }

    @Test("each address is tried in turn; the last error is the failure")
    func addressFallback() {
        var machine = HTTP2ConnectionMachine()
        _ = machine.start()
        _ = machine.resolved([first, second])
        #expect(machine.connectFailed("refused") == [.connect(second)])
        #expect(machine.connectFailed("unreachable") == [.close(.connect("unreachable"))])
    }

    @Test("failures are classed by the phase they happen in")
    func failureClasses() {
        var resolving = HTTP2ConnectionMachine()
        _ = resolving.start()
        #expect(resolving.resolveFailed("NXDOMAIN") == [.close(.connect("cannot resolve host: NXDOMAIN"))])

        var empty = HTTP2ConnectionMachine()
        _ = empty.start()
        #expect(empty.resolved([]) == [.close(.connect("host resolved to no address"))])

        var handshaking = HTTP2ConnectionMachine()
        _ = handshaking.start()
        _ = handshaking.resolved([first])
        _ = handshaking.connected()
        #expect(handshaking.failed("certificate verify failed") == [.close(.tls("certificate verify failed"))])

        var ready = machine(in: .ready)
        #expect(ready.failed("EOF") == [.close(.lost("EOF"))])
        #expect(ready.failed("again") == [])
    }

    @Test("ALPN other than h2 fails the TLS phase", arguments: [nil, "http/1.1"] as [String?])
    func alpnRequired(alpn: String?) {
        var machine = HTTP2ConnectionMachine()
        _ = machine.start()
        _ = machine.resolved([first])
        _ = machine.connected()
        let actions = machine.handshakeCompleted(alpn: alpn)
        guard case .close(.tls(let detail))? = actions.first else {
            Issue.record("got \(actions)")
            return
        }
        #expect(detail.contains("h2"))
        #expect(machine.state == .closed)
    }

    @Test("the connect timeout is a connect failure before TLS, a TLS failure during it, nothing once ready")
    func connectTimeout() {
        var connecting = HTTP2ConnectionMachine()
        _ = connecting.start()
        _ = connecting.resolved([first])
        _ = connecting.connectFailed("refused")
        var connecting2 = HTTP2ConnectionMachine()
        _ = connecting2.start()
        _ = connecting2.resolved([first, second])
        _ = connecting2.connectFailed("refused")
        #expect(connecting2.connectTimedOut(after: "5 seconds") == [.close(.connect("connect timed out after 5 seconds (refused)"))])

        var handshaking = HTTP2ConnectionMachine()
        _ = handshaking.start()
        _ = handshaking.resolved([first])
        _ = handshaking.connected()
        #expect(handshaking.connectTimedOut(after: "5 seconds") == [.close(.tls("TLS/HTTP/2 handshake timed out after 5 seconds"))])

        var ready = machine(in: .ready)
        #expect(ready.connectTimedOut(after: "5 seconds") == [])
    }

    @Test("GOAWAY drains a ready connection, and fails one not yet ready")
    func goAway() {
        var ready = machine(in: .ready)
        #expect(ready.goAwayReceived() == [.announceDraining])
        #expect(ready.state == .draining)
        #expect(ready.drain() == [])
        #expect(ready.goAwayReceived() == [])

        var handshaking = HTTP2ConnectionMachine()
        _ = handshaking.start()
        _ = handshaking.resolved([first])
        _ = handshaking.connected()
        // A GOAWAY needs an HTTP/2 session: TLS is done, SETTINGS not yet in.
        _ = handshaking.handshakeCompleted(alpn: "h2")
        #expect(handshaking.goAwayReceived() == [.close(.tls("server sent GOAWAY before the connection was ready"))])
    }

    @Test("draining before ready closes at once")
    func drainEarly() {
        var machine = HTTP2ConnectionMachine()
        _ = machine.start()
        #expect(machine.drain() == [.close(nil)])
        #expect(machine.drained() == [])
    }

    /// A machine driven to one named state.
    enum Phase: String, CaseIterable, CustomStringConvertible {
        case resolving, connecting, handshakingTLS, awaitingSettings, ready, draining, closed
        var description: String { rawValue }
    }

    func machine(in phase: Phase) -> HTTP2ConnectionMachine {
        var machine = HTTP2ConnectionMachine()
        _ = machine.start()
        if phase == .resolving { return machine }
        _ = machine.resolved([first])
        if phase == .connecting { return machine }
        _ = machine.connected()
        if phase == .handshakingTLS { return machine }
        _ = machine.handshakeCompleted(alpn: "h2")
        if phase == .awaitingSettings { return machine }
        _ = machine.settingsReceived()
        if phase == .ready { return machine }
        _ = machine.goAwayReceived()
        if phase == .draining { return machine }
        _ = machine.drained()
        return machine
    }

    @Test("the handshake has two steps: TLS, then the server's first SETTINGS; both count as handshaking")
    func handshakeSteps() {
        #expect(machine(in: .handshakingTLS).machineState == .handshakingTLS)
        #expect(machine(in: .awaitingSettings).machineState == .awaitingSettings)
        #expect(machine(in: .handshakingTLS).state == .handshaking)
        #expect(machine(in: .awaitingSettings).state == .handshaking)
    }

    @Test("a connection remembers in its closed state whether it was ever ready")
    func closedRemembersReady() {
        var ready = machine(in: .ready)
        _ = ready.failed("EOF")
        #expect(ready.machineState == .closed(wasReady: true))
        var early = machine(in: .awaitingSettings)
        _ = early.failed("bad preface")
        #expect(early.machineState == .closed(wasReady: false))
        #expect(!early.wasReady)
    }

    /// Events that can reach a closed connection: a resolver answer or a
    /// timer from before the close, a second close, a start on a dead one.
    enum LateEvent: String, CaseIterable, CustomStringConvertible {
        case resolved, resolveFailed, connectTimedOut, failed, drain, drained, start
        var description: String { rawValue }

        func apply(to machine: inout HTTP2ConnectionMachine) -> [HTTP2ConnectionMachine.Action] {
            switch self {
            case .resolved: machine.resolved([SocketAddress(ip: "127.0.0.1", port: 1)!])
            case .resolveFailed: machine.resolveFailed("NXDOMAIN")
            case .connectTimedOut: machine.connectTimedOut(after: "1 second")
            case .failed: machine.failed("late")
            case .drain: machine.drain()
            case .drained: machine.drained()
            case .start: machine.start()
            }
        }
    }

    @Test("late events after the close change nothing", arguments: LateEvent.allCases)
    func lateEventsAfterClose(event: LateEvent) {
        var closed = machine(in: .closed)
        let before = closed
        #expect(event.apply(to: &closed) == [])
        #expect(closed == before)
    }

    @Test("the connect timeout in each state: its failure, or nothing once ready",
          arguments: [
              (Phase.resolving, [HTTP2ConnectionMachine.Action.close(.connect("connect timed out after 5 seconds"))]),
              (.connecting, [.close(.connect("connect timed out after 5 seconds"))]),
              (.handshakingTLS, [.close(.tls("TLS/HTTP/2 handshake timed out after 5 seconds"))]),
              (.awaitingSettings, [.close(.tls("TLS/HTTP/2 handshake timed out after 5 seconds"))]),
              (.ready, []),
              (.draining, []),
              (.closed, []),
          ])
    func connectTimeoutByState(phase: Phase, expected: [HTTP2ConnectionMachine.Action]) {
        var machine = machine(in: phase)
        #expect(machine.connectTimedOut(after: "5 seconds") == expected)
    }

    @Test("the end of the transport is an orderly close only when draining with no stream left",
          arguments: [
              (Phase.draining, 0, [HTTP2ConnectionMachine.Action.close(nil)]),
              (.draining, 2, [.close(.lost("server closed the connection"))]),
              (.ready, 0, [.close(.lost("server closed the connection"))]),
              (.awaitingSettings, 0, [.close(.tls("server closed the connection"))]),
              (.closed, 0, []),
          ])
    func transportEnd(phase: Phase, streamsLeft: Int, expected: [HTTP2ConnectionMachine.Action]) {
        var machine = machine(in: phase)
        #expect(machine.transportEnded("server closed the connection", streamsLeft: streamsLeft) == expected)
    }

    @Test("a second GOAWAY while draining changes nothing; SETTINGS after ready change only limits")
    func repeatedFrames() {
        var draining = machine(in: .draining)
        #expect(draining.goAwayReceived() == [])
        #expect(draining.settingsReceived() == [])
        #expect(draining.state == .draining)
    }

    @Test("frames read after a GOAWAY closed an unready connection, in the same read, change nothing")
    func framesAfterEarlyGoAway() {
        var machine = machine(in: .awaitingSettings)
        #expect(machine.goAwayReceived() == [.close(.tls("server sent GOAWAY before the connection was ready"))])
        #expect(machine.settingsReceived() == [])
        #expect(machine.goAwayReceived() == [])
        #expect(machine.machineState == .closed(wasReady: false))
    }

    @Test("our drain before ready closes at once, in every early state",
          arguments: [Phase.resolving, .connecting, .handshakingTLS, .awaitingSettings])
    func drainBeforeReady(phase: Phase) {
        var machine = machine(in: phase)
        #expect(machine.drain() == [.close(nil)])
        #expect(machine.machineState == .closed(wasReady: false))
    }

    @Test("states are ordered along the machine")
    func ordering() {
        #expect(HTTP2ConnectionState.allCases.sorted() == HTTP2ConnectionState.allCases)
        #expect(HTTP2ConnectionState.handshaking < .ready && .ready < .draining)
    }

    @Test("failure classes map to the outcomes of requests that were waiting")
    func outcomes() {
        #expect(ConnectionFailure.connect("x").failureOfWaitingRequest == .connectFailed("x"))
        #expect(ConnectionFailure.tls("y").failureOfWaitingRequest == .tlsFailed("y"))
        #expect(ConnectionFailure.lost("z").failureOfWaitingRequest == .streamFailed("z"))
    }
}
