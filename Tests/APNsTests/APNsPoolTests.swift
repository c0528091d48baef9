import APNsCore
import Dispatch
import EventLoop
import Glibc
import RelayCore
import Testing
import TestSupport
import TLS
import APNsEmulator
import HTTPCore
@testable import APNs
@testable import HTTP2Client

@Suite("APNs pool against the emulator", .serialized)
struct APNsPoolTests {
    static func client(_ emulator: APNsEmulator,
                       _ adjust: (inout APNsClientConfiguration) -> Void = { _ in }) throws -> LoopClient {
        var configuration = Fixtures.configuration(
            port: emulator.port, context: try Fixtures.tlsContext(identity: Fixtures.clientIdentity()))
        adjust(&configuration)
        return try LoopClient(configuration)
    }

    /// The core no-loss, no-duplicate guarantee: streams above GOAWAY's
    /// last-stream-id (and REFUSED_STREAM) are resent on a new connection,
    /// the others are answered where they are.
    ///
    /// With answers at once, GOAWAY after 500 tends to land between two
    /// batches of 100 (nothing above last-stream-id in flight); after 333 it
    /// lands inside a batch, so streams above it are resent.
    @Test("2,000 concurrent sends, 100 streams per connection, GOAWAY every N: each completes once, each accepted once",
          arguments: [500, 333])
    func goAwayStorm(goAwayAfter: Int) throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(maxConcurrentStreams: 100, goAwayAfterStreams: goAwayAfter), record: true)
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.maxConnectionsPerEnvironment = 4 }
        let notifications = try Fixtures.notifications(count: 2000)
        let results = try client.send(notifications, timeout: 60)
        #expect(results.completionCounts.allSatisfy { $0 == 1 })
        #expect(results.reentrantCompletions == 0)
        let failures = results.outcomes.filter { !$0.isAccepted }
        #expect(failures.isEmpty, "\(failures.count) failed, first: \(String(describing: failures.first))")
        let statistics = emulator.statistics
        #expect(statistics.accepted == 2000)
        #expect(statistics.duplicateAPNsIDs == 0)
        let received = emulator.receivedNotifications().map(\.apnsID)
        #expect(received.count == 2000)
        #expect(Set(received) == Set(notifications.map(\.apnsID)))
        #expect(statistics.connections >= 2000 / goAwayAfter, "GOAWAY every \(goAwayAfter) streams needs more connections")
        let status = client.status
        // Every connection but those still open at the end (at most the 4
        // the client may hold) reached N streams and sent GOAWAY; the client
        // must have read each one. (Not `2000 / N - 1`: the last 4 can each
        // end just short of N, so with N = 500 only 2 GOAWAYs may be due.)
        #expect(status.counters.goAwaysReceived >= statistics.connections - 4)
        if goAwayAfter % 100 != 0 {
            #expect(status.counters.resent > 0, "streams in flight above last-stream-id must have been resent")
        }
        #expect(status.counters.sent == 2000)
        #expect(status.counters.completed == 2000)
        #expect(status.inFlight == 0 && status.queued == 0)
    }

    @Test("a server announcing 1 stream first, then more, gets every request")
    func initialOneStream() throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(maxConcurrentStreams: 50, initialMaxConcurrentStreams: 1))
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.maxConnectionsPerEnvironment = 1 }
        let results = try client.send(Fixtures.notifications(count: 200))
        #expect(results.outcomes.allSatisfy { $0.isAccepted })
        #expect(emulator.acceptedCount == 200)
        #expect(emulator.statistics.connections == 1)
    }

    @Test("when every stream is taken, more connections open, up to the maximum")
    func moreConnections() throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(300), maxConcurrentStreams: 10))
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.maxConnectionsPerEnvironment = 3 }
        let results = try client.send(Fixtures.notifications(count: 60))
        #expect(results.outcomes.allSatisfy { $0.isAccepted })
        #expect(emulator.statistics.connections == 3)
        #expect(client.status.connections[.ready] == 3)
    }

    /// Notifications of about 3.4 KB: twenty fill the 65,535-byte window
    /// an HTTP/2 connection starts with.
    static func largeNotifications(count: Int) throws -> [APNsNotification] {
        try (0..<count).map { index in
            try makeNotification(
                target: RelayTarget(environment: .development, deviceToken: Fixtures.deviceToken(index), extra: nil),
                message: WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 0x42, count: 2600), ttl: 3600),
                topic: TestCertificates.bundleID, credential: .primary, apnsID: Fixtures.apnsID(), now: Int(time(nil))).notification
        }
    }

    @Test("bodies beyond the server's connection window wait in the pool and reach APNs whole, in the order sent")
    func connectionWindowOrder() throws {
        // The emulator keeps HTTP/2's initial 65,535-byte connection window;
        // 300 bodies of 3.4 KB need it refilled fifteen times.
        let emulator = try Fixtures.certificateEmulator(record: true)
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.maxConnectionsPerEnvironment = 1 }
        let notifications = try Self.largeNotifications(count: 300)
        let results = try client.send(notifications)
        #expect(results.outcomes.allSatisfy { $0.isAccepted })
        let arrived = emulator.receivedNotifications().map(\.deviceToken)
        #expect(arrived == notifications.map(\.deviceToken))
    }

    @Test("a connection whose window is full makes the pool open another, up to the maximum")
    func connectionWindowMoreConnections() throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(200)))
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.maxConnectionsPerEnvironment = 3 }
        let results = try client.send(try Self.largeNotifications(count: 300))
        #expect(results.outcomes.allSatisfy { $0.isAccepted })
        #expect(emulator.statistics.connections == 3)
    }

    @Test("with a large connection window, one connection carries the same burst")
    func largeConnectionWindow() throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(200), connectionWindowSize: 16 << 20))
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.maxConnectionsPerEnvironment = 3 }
        // The first send opens the connection and sees the server's WINDOW_UPDATE.
        #expect(try client.send(try Self.largeNotifications(count: 1)).outcomes.allSatisfy { $0.isAccepted })
        let results = try client.send(try Self.largeNotifications(count: 300))
        #expect(results.outcomes.allSatisfy { $0.isAccepted })
        #expect(emulator.statistics.connections == 1)
    }

    @Test("beyond the queue bound, sends are refused as overloaded")
    func overloaded() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try Self.client(emulator) {
            $0.settings.maxConnectionsPerEnvironment = 1
            $0.settings.maxQueuedPerEnvironment = 2
        }
        // No connection exists yet: two wait for it, the rest are refused.
        let results = try client.send(Fixtures.notifications(count: 5))
        #expect(results.outcomes.filter { $0.isAccepted }.count == 2)
        #expect(results.outcomes.filter { $0 == .overloaded }.count == 3)
        #expect(results.reentrantCompletions == 0)
    }

    @Test("a connection dropped mid-flight fails its requests as transport errors; later sends reconnect")
    func droppedConnection() throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(500)))
        defer { emulator.stop() }
        let client = try Self.client(emulator)
        _ = try client.send(Fixtures.notifications(count: 1))
        // Nine requests wait for their delayed answers when the tenth drops the connection.
        emulator.update { $0.dropAfterStreams = 10 }
        let results = try client.send(Fixtures.notifications(count: 10, first: 100))
        #expect(results.completionCounts.allSatisfy { $0 == 1 })
        for outcome in results.outcomes {
            guard case .streamFailed(let detail) = outcome else {
                Issue.record("expected a stream failure, got \(outcome)")
                continue
            }
            #expect(detail.contains("connection lost"))
        }
        emulator.update {
            $0.dropAfterStreams = nil
            $0.responseDelay = .zero
        }
        let later = try client.send(Fixtures.notifications(count: 5, first: 200))
        #expect(later.outcomes.allSatisfy { $0.isAccepted }, "\(later.outcomes)")
        #expect(emulator.statistics.connections == 2)
    }

    @Test("the fault token that drops the connection fails only what was in flight there")
    func dropFaultToken() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try Self.client(emulator)
        let drop = try Fixtures.notification(token: APNsFaultToken.token(code: 0x10))
        let results = try client.send([drop])
        guard case .streamFailed = results.outcomes[0] else {
            Issue.record("got \(results.outcomes[0])")
            return
        }
        #expect(try client.send(Fixtures.notifications(count: 3)).outcomes.allSatisfy { $0.isAccepted })
    }

    @Test("no answer within the answer timeout: answerTimedOut, the stream is reset, the connection keeps working")
    func answerTimeout() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try Self.client(emulator) { $0.settings.answerTimeout = .milliseconds(400) }
        let silent = try Fixtures.notification(token: APNsFaultToken.token(code: 0x0e))
        let start = DispatchTime.now()
        let results = try client.send([silent] + Fixtures.notifications(count: 2))
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        #expect(results.outcomes[0] == .answerTimedOut)
        #expect(results.outcomes[1...].allSatisfy { $0.isAccepted })
        #expect(elapsed >= 0.35 && elapsed < 5)
        #expect(client.status.counters.answerTimeouts == 1)
        #expect(try client.send(Fixtures.notifications(count: 2, first: 50)).outcomes.allSatisfy { $0.isAccepted })
        #expect(emulator.statistics.connections == 1)
    }

    @Test("the answer timeout also covers time spent waiting for a connection")
    func answerTimeoutWhileQueued() throws {
        // TCP completes (backlog), TLS never does: requests wait in the queue.
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        var configuration = Fixtures.configuration(port: listener.localPort, context: try Fixtures.tlsContext(identity: nil))
        configuration.settings.connectTimeout = .seconds(5)
        configuration.settings.answerTimeout = .milliseconds(300)
        let client = try LoopClient(configuration)
        let results = try client.send(Fixtures.notifications(count: 3))
        #expect(results.outcomes == [.answerTimedOut, .answerTimedOut, .answerTimedOut])
        #expect(client.status.queued == 0)
        #expect(client.status.connections[.handshaking] == 1)
    }

    @Test("a request HTTP/2 cannot carry fails on its own, after send returns, and the connection carries on")
    func unsendableRequest() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try Self.client(emulator)
        // Once before a connection exists (queued path), once on a ready one (direct path).
        for _ in 0..<2 {
            var bad = try Fixtures.notification(token: Fixtures.deviceToken(1))
            bad.headers.append(HTTPField(name: "bad\nname", value: "x"))
            let results = try client.send([bad] + Fixtures.notifications(count: 1, first: 2))
            guard case .streamFailed(let detail) = results.outcomes[0] else {
                Issue.record("got \(results.outcomes[0])")
                return
            }
            #expect(detail.hasPrefix("request not sendable over HTTP/2"))
            #expect(results.outcomes[1].isAccepted)
        }
        #expect(emulator.statistics.connections == 1)
    }

    @Test("a reset stream is a stream failure for that request only")
    func resetStream() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let client = try Self.client(emulator)
        let reset = try Fixtures.notification(token: APNsFaultToken.token(code: 0x0f))
        let results = try client.send([reset] + Fixtures.notifications(count: 2))
        #expect(results.outcomes[0] == .streamFailed("stream reset: INTERNAL_ERROR"))
        #expect(results.outcomes[1...].allSatisfy { $0.isAccepted })
    }

    /// The backoff's times (0.5–1 s here), the retry after it and the reset
    /// are the machine's (`HTTP2PoolMachineTests`); this checks a real refused
    /// connect is classed and reported as such, then starts the backoff.
    @Test("server unreachable: connectFailed, then allConnectionsDown during backoff")
    func unreachable() throws {
        let port = try HTTPTestServer.closedPort()
        var configuration = Fixtures.configuration(port: port, context: try Fixtures.tlsContext(identity: nil))
        // Backoff between 0.5 and 1 s (half of it random).
        configuration.settings.backoffBase = .seconds(1)
        configuration.settings.backoffCap = .seconds(1)
        let client = try LoopClient(configuration)
        let first = try client.send(Fixtures.notifications(count: 3))
        for outcome in first.outcomes {
            guard case .connectFailed(let detail) = outcome else {
                Issue.record("got \(outcome)")
                continue
            }
            #expect(detail.contains("refused"), "\(detail)")
        }
        #expect(try client.send(Fixtures.notifications(count: 1)).outcomes == [.allConnectionsDown])
        #expect(client.status.counters.connectFailures == 1)
        #expect(client.status.counters.connectionsOpened == 1, "no attempt during the backoff")
        guard case .connect(let detail)? = client.status.lastConnectFailure else {
            Issue.record("no connect failure recorded: \(String(describing: client.status.lastConnectFailure))")
            return
        }
        #expect(detail.contains("refused"), "\(detail)")
    }

    @Test("an unresolvable host is a connect failure")
    func unresolvable() throws {
        let configuration = Fixtures.configuration(
            port: 443, context: try Fixtures.tlsContext(identity: nil), host: "no such host")
        let client = try LoopClient(configuration)
        guard case .connectFailed(let detail) = try client.send(Fixtures.notifications(count: 1)).outcomes[0] else {
            Issue.record("not a connect failure")
            return
        }
        #expect(detail.contains("resolve"))
    }
}
