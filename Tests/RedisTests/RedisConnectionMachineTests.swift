import EventLoop
import TestSupport
import Testing
@testable import Redis

@Suite("Redis connection machine")
struct RedisConnectionMachineTests {
    static let ms = MachineHarness.ms
    static func id(_ raw: UInt64) -> RedisCommandID { MachineHarness.id(raw) }

    @Test("over TCP it resolves, connects, logs in with AUTH then SELECT, and is ready")
    func happyPath() {
        var harness = MachineHarness()
        let start = harness.now
        #expect(harness.machine.state == .idle)
        #expect(harness.start() == [.armConnectTimer(at: start + 2000 * Self.ms), .resolve(host: "redis.internal", port: 6379, attempt: 1)])
        #expect(harness.machine.state == .connecting)
        #expect(harness.resolved([MachineHarness.first, MachineHarness.second], attempt: 1) == [.connect(.tcp(MachineHarness.first))])
        #expect(harness.connected() == [.writeHandshake])
        #expect(harness.machine.machineState == .handshaking(step: 0))
        #expect(harness.reply(.status("OK")) == [])
        #expect(harness.machine.machineState == .handshaking(step: 1))
        #expect(harness.reply(.status("OK")) == [.cancelConnectTimer, .report(.connected)])
        #expect(harness.machine.state == .ready)
    }

    @Test("a unix socket without a password or database is ready once connected")
    func unixWithoutHandshake() {
        var harness = MachineHarness(endpoint: .unix(path: "/run/redis.sock"), handshake: [])
        #expect(harness.start() == [.armConnectTimer(at: harness.now + 2000 * Self.ms), .connect(.unix(path: "/run/redis.sock"))])
        #expect(harness.connected() == [.cancelConnectTimer, .report(.connected)])
        #expect(harness.machine.state == .ready)
    }

    @Test("commands sent before the login wait, then go out in order after it")
    func queuedUntilReady() {
        var harness = MachineHarness()
        _ = harness.start()
        let sent = harness.now
        let (first, firstActions) = harness.send()
        #expect(first == Self.id(0))
        #expect(firstActions == [.setCommandTimer(at: sent + 1000 * Self.ms)])
        harness.advance(ms: 10)
        #expect(harness.send().1 == [])
        #expect(harness.send().1 == [])
        _ = harness.resolved([MachineHarness.first], attempt: 1)
        _ = harness.connected()
        _ = harness.reply(.status("OK"))
        #expect(harness.reply(.status("OK")) == [
            .cancelConnectTimer, .report(.connected), .write([Self.id(0), Self.id(1), Self.id(2)]),
        ])
        #expect(harness.machine.pendingCount == 3)
    }

    @Test("a ready connection writes each command at once; replies complete them in order")
    func repliesInOrder() {
        var harness = MachineHarness()
        harness.ready()
        let sent = harness.now
        #expect(harness.send().1 == [.write([Self.id(0)]), .setCommandTimer(at: sent + 1000 * Self.ms)])
        harness.advance(ms: 5)
        #expect(harness.send().1 == [.write([Self.id(1)])])
        harness.advance(ms: 5)
        #expect(harness.send().1 == [.write([Self.id(2)])])
        // The timer follows the front's deadline as replies arrive.
        #expect(harness.reply(.integer(1)) == [.succeed(Self.id(0), .integer(1)), .setCommandTimer(at: sent + 1005 * Self.ms)])
        #expect(harness.reply(.error("WRONGTYPE Operation against a key holding the wrong kind of value")) == [
            .fail(Self.id(1), .serverError("WRONGTYPE Operation against a key holding the wrong kind of value")),
            .setCommandTimer(at: sent + 1010 * Self.ms),
        ])
        #expect(harness.reply(.null) == [.succeed(Self.id(2), .null), .setCommandTimer(at: nil)])
        #expect(harness.machine.pendingCount == 0)
    }

    @Test("errors inside an array are values, not failures")
    func nestedErrorIsValue() {
        var harness = MachineHarness()
        harness.ready()
        _ = harness.send()
        let exec = RedisValue.array([.status("OK"), .error("ERR value is not an integer")])
        #expect(harness.reply(exec) == [.succeed(Self.id(0), exec), .setCommandTimer(at: nil)])
    }

    @Test("each resolved address is tried in turn; the last error fails the attempt")
    func addressFallback() {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.resolved([MachineHarness.first, MachineHarness.second], attempt: 1)
        #expect(harness.connectFailed("refused") == [.closeTransport, .connect(.tcp(MachineHarness.second))])
        let failed = harness.now
        #expect(harness.connectFailed("unreachable") == [
            .closeTransport, .cancelConnectTimer, .armReconnectTimer(at: failed + 50 * Self.ms),
            .report(.attemptFailed(.connectFailed("unreachable"), retryIn: 50 * Self.ms)),
        ])
        #expect(harness.machine.state == .waitingToReconnect)
    }

    @Test("failed attempts back off base·2^(n−1), capped, half fixed and half random")
    func backoff() {
        // Jitter 0 then 1 << 63 (half the random half): delay/2, then 3/4 of it.
        var harness = MachineHarness(jitter: [0, 1 << 63])
        _ = harness.start()
        var delays: [UInt64] = []
        for attempt in 1...7 {
            let actions = harness.resolveFailed("Name or service not known", attempt: attempt)
            guard case .report(.attemptFailed(let error, let delay)) = actions.last else {
                Issue.record("no report in \(actions)")
                return
            }
            #expect(error == .connectFailed("cannot resolve host: Name or service not known"))
            #expect(actions.contains(.armReconnectTimer(at: harness.now + delay)))
            delays.append(delay / Self.ms)
            harness.now += delay
            #expect(harness.reconnectTimerFired() == [
                .armConnectTimer(at: harness.now + 2000 * Self.ms), .resolve(host: "redis.internal", port: 6379, attempt: attempt + 1),
            ])
        }
        // 100, 200, 400, 800, then the 1000 ms cap.
        #expect(delays == [50, 150, 200, 600, 500, 750, 500])
    }

    @Test("a ready connection resets the backoff")
    func readyResetsBackoff() {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.resolveFailed("x", attempt: 1)
        harness.advance(ms: 50)
        _ = harness.reconnectTimerFired()
        _ = harness.resolveFailed("x", attempt: 2)
        harness.advance(ms: 100)
        _ = harness.reconnectTimerFired()
        _ = harness.resolved([MachineHarness.first], attempt: 3)
        _ = harness.connected()
        _ = harness.reply(.status("OK"))
        _ = harness.reply(.status("OK"))
        let lost = harness.now
        #expect(harness.transportLost("server closed the connection") == [
            .closeTransport, .armReconnectTimer(at: lost + 50 * Self.ms),
            .report(.lost(.connectionLost("server closed the connection"), retryIn: 50 * Self.ms)),
        ])
    }

    @Test("a lost connection fails its written commands with the cause and reconnects after a backoff")
    func lostConnection() {
        var harness = MachineHarness()
        harness.ready()
        _ = harness.send()
        _ = harness.send()
        let lost = harness.now
        let error = RedisError.connectionLost("read failed: Connection reset by peer (104)")
        #expect(harness.transportLost("read failed: Connection reset by peer (104)") == [
            .closeTransport, .fail(Self.id(0), error), .fail(Self.id(1), error), .setCommandTimer(at: nil),
            .armReconnectTimer(at: lost + 50 * Self.ms), .report(.lost(error, retryIn: 50 * Self.ms)),
        ])
        #expect(harness.machine.state == .waitingToReconnect)
        // Sent while away: queued for the next connection.
        #expect(harness.send().1 == [.setCommandTimer(at: harness.now + 1000 * Self.ms)])
        harness.advance(ms: 50)
        #expect(harness.reconnectTimerFired() == [
            .armConnectTimer(at: harness.now + 2000 * Self.ms), .resolve(host: "redis.internal", port: 6379, attempt: 2),
        ])
        _ = harness.resolved([MachineHarness.first], attempt: 2)
        _ = harness.connected()
        _ = harness.reply(.status("OK"))
        #expect(harness.reply(.status("OK")) == [.cancelConnectTimer, .report(.connected), .write([Self.id(2)])])
    }

    @Test("queued commands survive failed attempts and go out on the next connection")
    func queuedSurviveFailedAttempt() {
        var harness = MachineHarness(handshake: [])
        _ = harness.start()
        _ = harness.send()
        _ = harness.resolved([MachineHarness.first], attempt: 1)
        _ = harness.connectFailed("Connection refused")
        harness.advance(ms: 50)
        _ = harness.reconnectTimerFired()
        _ = harness.resolved([MachineHarness.first], attempt: 2)
        #expect(harness.connected() == [.cancelConnectTimer, .report(.connected), .write([Self.id(0)])])
    }

    @Test("a queued command past its deadline fails with timedOut, naming the last failure")
    func queuedTimeout() {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.send()
        harness.advance(ms: 300)
        _ = harness.send()
        _ = harness.resolveFailed("Name or service not known", attempt: 1)
        harness.advance(ms: 700)
        #expect(harness.commandTimerFired() == [
            .fail(Self.id(0), .timedOut("no connection to Redis within 1.0 seconds; last failure: cannot resolve host: Name or service not known")),
            .setCommandTimer(at: harness.now + 300 * Self.ms),
        ])
        #expect(harness.machine.pendingCount == 1)
        #expect(harness.machine.state == .waitingToReconnect)
    }

    @Test("a written command past its deadline fails with timedOut, and the connection goes with those written after it")
    func writtenTimeout() {
        var harness = MachineHarness()
        harness.ready()
        _ = harness.send()
        harness.advance(ms: 400)
        _ = harness.send()
        harness.advance(ms: 600)
        let lost = RedisError.connectionLost("dropped after a command got no reply within 1.0 seconds")
        #expect(harness.commandTimerFired() == [
            .fail(Self.id(0), .timedOut("no reply within 1.0 seconds")),
            // The timer that fired is the only one: nothing to cancel.
            .closeTransport, .fail(Self.id(1), lost),
            .armReconnectTimer(at: harness.now + 50 * Self.ms), .report(.lost(lost, retryIn: 50 * Self.ms)),
        ])
        #expect(harness.machine.pendingCount == 0)
    }

    @Test("a command timer that fires early fails nothing and is armed again")
    func earlyCommandTimer() {
        var harness = MachineHarness()
        harness.ready()
        let sent = harness.now
        _ = harness.send()
        harness.advance(ms: 999)
        #expect(harness.commandTimerFired() == [.setCommandTimer(at: sent + 1000 * Self.ms)])
    }

    @Test("beyond maxPendingCommands send fails at once with tooManyQueued, connected or not")
    func boundedQueue() {
        var harness = MachineHarness()
        _ = harness.start()
        for _ in 0..<4 { _ = harness.send() }
        #expect(harness.send() == (Self.id(4), [.fail(Self.id(4), .tooManyQueued(limit: 4))]))
        harness.now += 1
        _ = harness.resolved([MachineHarness.first], attempt: 1)
        _ = harness.connected()
        _ = harness.reply(.status("OK"))
        _ = harness.reply(.status("OK"))
        #expect(harness.send().1 == [.fail(Self.id(5), .tooManyQueued(limit: 4))])
        _ = harness.reply(.status("OK"))
        #expect(harness.send().1 == [.write([Self.id(6)])])
        #expect(harness.machine.pendingCount == 4)
    }

    @Test("a refused AUTH fails the attempt with the server's text, and is tried again after the backoff")
    func authRefused() {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.resolved([MachineHarness.first], attempt: 1)
        _ = harness.connected()
        let error = RedisError.connectFailed("AUTH refused: WRONGPASS invalid username-password pair or user is disabled.")
        #expect(harness.reply(.error("WRONGPASS invalid username-password pair or user is disabled.")) == [
            .closeTransport, .cancelConnectTimer, .armReconnectTimer(at: harness.now + 50 * Self.ms),
            .report(.attemptFailed(error, retryIn: 50 * Self.ms)),
        ])
    }

    @Test("SELECT refused, or answered with anything but +OK, fails the attempt", arguments: [
        (RedisValue.error("ERR DB index is out of range"), "SELECT refused: ERR DB index is out of range"),
        (RedisValue.integer(1), "SELECT answered :1, not +OK"),
    ])
    func selectRefused(_ answer: RedisValue, _ reason: String) {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.resolved([MachineHarness.first], attempt: 1)
        _ = harness.connected()
        _ = harness.reply(.status("OK"))
        #expect(harness.reply(answer).last == .report(.attemptFailed(.connectFailed(reason), retryIn: 50 * Self.ms)))
    }

    @Test("the connect timeout fails the attempt, naming the phase it was in")
    func connectTimeout() {
        var resolving = MachineHarness()
        _ = resolving.start()
        #expect(resolving.connectTimerFired() == [
            .cancelConnectTimer, .armReconnectTimer(at: resolving.now + 50 * Self.ms),
            .report(.attemptFailed(.connectFailed("resolving the host timed out after 2.0 seconds"), retryIn: 50 * Self.ms)),
        ])

        var connecting = MachineHarness()
        _ = connecting.start()
        _ = connecting.resolved([MachineHarness.first, MachineHarness.second], attempt: 1)
        _ = connecting.connectFailed("Connection refused")
        #expect(connecting.connectTimerFired().last == .report(.attemptFailed(
            .connectFailed("connect timed out after 2.0 seconds (Connection refused)"), retryIn: 50 * Self.ms)))

        var handshaking = MachineHarness()
        _ = handshaking.start()
        _ = handshaking.resolved([MachineHarness.first], attempt: 1)
        _ = handshaking.connected()
        _ = handshaking.reply(.status("OK"))
        #expect(handshaking.connectTimerFired() == [
            .closeTransport, .cancelConnectTimer, .armReconnectTimer(at: handshaking.now + 50 * Self.ms),
            .report(.attemptFailed(.connectFailed("no answer to SELECT within 2.0 seconds"), retryIn: 50 * Self.ms)),
        ])
    }

    @Test("a resolver's answer for an attempt that already ended is ignored")
    func lateResolverAnswer() {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.connectTimerFired()
        #expect(harness.resolved([MachineHarness.first], attempt: 1) == [])
        #expect(harness.resolveFailed("late", attempt: 1) == [])
        harness.advance(ms: 50)
        _ = harness.reconnectTimerFired()
        #expect(harness.resolved([MachineHarness.first], attempt: 1) == [])
        #expect(harness.resolved([MachineHarness.first], attempt: 2) == [.connect(.tcp(MachineHarness.first))])
        #expect(harness.resolved([], attempt: 2) == [])
    }

    @Test("a host that resolves to nothing fails the attempt")
    func resolvedToNothing() {
        var harness = MachineHarness()
        _ = harness.start()
        #expect(harness.resolved([], attempt: 1).last
            == .report(.attemptFailed(.connectFailed("host resolved to no address"), retryIn: 50 * Self.ms)))
    }

    @Test("a reply with no command waiting is a protocol error that drops the connection")
    func unsolicitedReply() {
        var harness = MachineHarness()
        harness.ready()
        let error = RedisError.protocolError("a reply with no command waiting for one")
        #expect(harness.reply(.status("OK")) == [
            .closeTransport, .armReconnectTimer(at: harness.now + 50 * Self.ms), .report(.lost(error, retryIn: 50 * Self.ms)),
        ])
    }

    @Test("garbage from the server fails the written commands with it, or the attempt while logging in")
    func protocolErrors() {
        var ready = MachineHarness()
        ready.ready()
        _ = ready.send()
        let error = RedisError.protocolError("Protocol error, got \"x\" as reply type byte")
        #expect(ready.protocolError("Protocol error, got \"x\" as reply type byte") == [
            .closeTransport, .fail(Self.id(0), error), .setCommandTimer(at: nil),
            .armReconnectTimer(at: ready.now + 50 * Self.ms), .report(.lost(error, retryIn: 50 * Self.ms)),
        ])

        var handshaking = MachineHarness()
        _ = handshaking.start()
        _ = handshaking.resolved([MachineHarness.first], attempt: 1)
        _ = handshaking.connected()
        #expect(handshaking.protocolError("Bad integer value").last == .report(.attemptFailed(
            .connectFailed("protocol error in the answer to AUTH: Bad integer value"), retryIn: 50 * Self.ms)))
        #expect(handshaking.machine.state == .waitingToReconnect)
    }

    @Test("the server closing during the login fails the attempt")
    func closedDuringLogin() {
        var harness = MachineHarness()
        _ = harness.start()
        _ = harness.resolved([MachineHarness.first], attempt: 1)
        _ = harness.connected()
        #expect(harness.transportLost("server closed the connection").last == .report(.attemptFailed(
            .connectFailed("server closed the connection (logging in, AUTH)"), retryIn: 50 * Self.ms)))
    }

    @Test("close fails every pending command once, in any state; later sends fail at once", arguments: [
        "idle", "resolving", "connecting", "handshaking", "ready", "waiting",
    ])
    func close(_ phase: String) {
        var harness = MachineHarness()
        var expected: [RedisAction] = []
        switch phase {
        case "idle":
            break
        case "resolving":
            _ = harness.start()
            expected = [.cancelConnectTimer]
        case "connecting":
            _ = harness.start()
            _ = harness.resolved([MachineHarness.first], attempt: 1)
            expected = [.closeTransport, .cancelConnectTimer]
        case "handshaking":
            _ = harness.start()
            _ = harness.resolved([MachineHarness.first], attempt: 1)
            _ = harness.connected()
            expected = [.closeTransport, .cancelConnectTimer]
        case "ready":
            harness.ready()
            expected = [.closeTransport]
        default:
            _ = harness.start()
            _ = harness.resolveFailed("x", attempt: 1)
            expected = [.cancelReconnectTimer]
        }
        _ = harness.send()
        _ = harness.send()
        expected += [.fail(Self.id(0), .closed), .fail(Self.id(1), .closed), .setCommandTimer(at: nil), .report(.closed)]
        #expect(harness.close() == expected)
        #expect(harness.machine.state == .closed)
        #expect(harness.close() == [])
        #expect(harness.send().1 == [.fail(Self.id(2), .closed)])
        #expect(harness.start() == [])
    }

    // MARK: Impossible events

    @Test("a reply while not reading stops the process")
    func replyWhileWaiting() async {
        await #expect(processExitsWith: .failure) {
            var harness = MachineHarness()
            _ = harness.start()
            _ = harness.reply(.status("OK"))
        }
    }

    @Test("a connect timer outside an attempt stops the process")
    func connectTimerWhenReady() async {
        await #expect(processExitsWith: .failure) {
            var harness = MachineHarness()
            harness.ready()
            _ = harness.connectTimerFired()
        }
    }
}
