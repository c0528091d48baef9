import APNsCore
import Dispatch
import EventLoop
import Foundation
import Glibc
import RelayCore
import Locking
import Testing
import TestSupport
import TLS
import APNsEmulator
@testable import APNs
@testable import HTTP2Client

@Suite("APNs connection: TLS, timeouts, PING, interop", .serialized)
struct APNsConnectionTests {
    static func tlsFailure(_ outcome: DeliveryOutcome) -> String? {
        if case .tlsFailed(let detail) = outcome { return detail }
        return nil
    }

    @Test("a server certificate from another CA is refused as a TLS failure")
    func untrustedServer() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let context = try Fixtures.tlsContext(identity: Fixtures.clientIdentity(), roots: TestCertificates.otherCACertificate)
        let client = try LoopClient(Fixtures.configuration(port: emulator.port, context: context))
        let outcome = try client.send(Fixtures.notifications(count: 1)).outcomes[0]
        let detail = try #require(Self.tlsFailure(outcome), "got \(outcome)")
        #expect(detail.contains("certif"), "\(detail)")
        #expect(emulator.acceptedCount == 0)
    }

    @Test("a client certificate the server does not accept, or none, is a TLS failure", arguments: [true, false])
    func clientCertificateRejected(presentOther: Bool) throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let identity = presentOther ? try TLSIdentity.pem(
            certificateFile: Fixtures.path(TestCertificates.otherClientCertificate),
            privateKeyFile: Fixtures.path(TestCertificates.otherClientKey)) : nil
        let client = try LoopClient(Fixtures.configuration(port: emulator.port, context: Fixtures.tlsContext(identity: identity)))
        let results = try client.send(Fixtures.notifications(count: 2))
        for outcome in results.outcomes {
            #expect(Self.tlsFailure(outcome) != nil, "got \(outcome)")
        }
        #expect(emulator.acceptedCount == 0)
        #expect(client.status.lastConnectFailure != nil)
    }

    @Test("a server that accepts TCP but never completes TLS hits the connect timeout")
    func handshakeTimeout() throws {
        // Listening, never accepting: the kernel completes TCP, nobody speaks TLS.
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        var configuration = Fixtures.configuration(port: listener.localPort, context: try Fixtures.tlsContext(identity: nil))
        configuration.settings.connectTimeout = .milliseconds(300)
        let client = try LoopClient(configuration)
        let start = Date()
        let outcome = try client.send(Fixtures.notifications(count: 1)).outcomes[0]
        let detail = try #require(Self.tlsFailure(outcome), "got \(outcome)")
        #expect(detail.contains("timed out"))
        #expect(Date().timeIntervalSince(start) >= 0.25)
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test("an idle connection is PINGed and stays usable")
    func idlePing() throws {
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        var configuration = Fixtures.configuration(
            port: emulator.port, context: try Fixtures.tlsContext(identity: Fixtures.clientIdentity()))
        configuration.settings.pingInterval = .milliseconds(100)
        configuration.settings.pingTimeout = .milliseconds(500)
        let client = try LoopClient(configuration)
        #expect(try client.send(Fixtures.notifications(count: 1)).outcomes.allSatisfy { $0.isAccepted })
        #expect(eventually(timeout: .seconds(5)) { client.status.counters.pingsSent >= 3 })
        #expect(client.status.connections[.ready] == 1)
        #expect(try client.send(Fixtures.notifications(count: 1, first: 5)).outcomes.allSatisfy { $0.isAccepted })
        #expect(emulator.statistics.connections == 1)
    }

    @Test("a peer that stops answering (no PING ack) is dropped as a lost connection")
    func pingTimeout() throws {
        // The emulator always answers PINGs; a TCP proxy that stops
        // forwarding imitates a peer that hangs without closing.
        let emulator = try Fixtures.certificateEmulator()
        defer { emulator.stop() }
        let proxy = try StallingProxy(targetPort: emulator.port)
        defer { proxy.stop() }
        var configuration = Fixtures.configuration(
            port: proxy.port, context: try Fixtures.tlsContext(identity: Fixtures.clientIdentity()))
        configuration.settings.pingInterval = .milliseconds(100)
        configuration.settings.pingTimeout = .milliseconds(300)
        let client = try LoopClient(configuration)
        #expect(try client.send(Fixtures.notifications(count: 1)).outcomes.allSatisfy { $0.isAccepted })
        proxy.stall()
        #expect(eventually(timeout: .seconds(5)) {
            if case .lost(let detail)? = client.status.lastConnectionLoss { return detail.contains("PING") }
            return false
        })
        #expect(client.status.connections[.ready] == nil)
    }
}

extension APNsConnectionTests {
    /// A request submitted in the same loop iteration in which the server's
    /// close is noticed never reaches the wire: it is sent again on a new
    /// connection instead of failing (APNs provably never saw it).
    @Test("a request whose frames never left the process when the connection died is resent, not failed")
    func unwrittenRequestIsResent() throws {
        let emulator = try Fixtures.certificateEmulator(record: true)
        defer { emulator.stop() }
        let proxy = try StallingProxy(targetPort: emulator.port)
        defer { proxy.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: proxy.port, context: try Fixtures.tlsContext(identity: Fixtures.clientIdentity())))
        #expect(try client.send(Fixtures.notifications(count: 1)).outcomes.allSatisfy { $0.isAccepted })
        // Hold the loop so the send task and the server's close are seen in
        // one iteration, the send first (its wake-up came first): the send is
        // queued, and the proxy has closed both sides, before the loop runs
        // again; the frames the send made are still in the process when the
        // close is read.
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        client.thread.loop.execute {
            held.signal()
            _ = release.wait(timeout: .now() + 10)
        }
        #expect(held.wait(timeout: .now() + 10) == .success)
        let notification = try Fixtures.notification(token: Fixtures.deviceToken(42))
        let pending = client.start([notification])
        // Returns once the client's kernel acknowledged the proxy's FIN: the
        // close is then in the client's socket, behind the send's wake-up in
        // epoll's ready list, and one epoll_wait sees both, in that order.
        #expect(proxy.closeConnections(), "the client's side saw the proxy close")
        release.signal()
        let results = try pending.wait(timeout: 10)
        let outcome = results.outcomes[0]
        #expect(outcome == .apns(status: 200, reason: nil, apnsID: notification.apnsID))
        #expect(client.status.counters.resent == 1)
        #expect(client.status.counters.connectionsLost == 1)
        #expect(emulator.receivedNotifications().filter { $0.apnsID == notification.apnsID }.count == 1)
    }
}

extension APNsConnectionTests {
    /// APNs may close right after its GOAWAY and the last answers it owes
    /// (RFC 9113 §6.8 lets a server stop waiting). A client still sending
    /// then gets EPIPE on its write while the answers and the GOAWAY sit
    /// unread in its receive queue: it must read them first, so the answered
    /// request keeps its answer and those above last-stream-id are resent.
    @Test("a write to a connection the server closed after GOAWAY: the unread answer and GOAWAY still count, nothing fails")
    func writeAfterServerClosedOnGoAway() throws {
        let emulator = try Fixtures.certificateEmulator(
            behavior: APNsEmulatorBehavior(maxConcurrentStreams: 100, goAwayAfterStreams: 2), record: true)
        defer { emulator.stop() }
        // One connection driven by hand (what a pool would do is the
        // machine's): the test makes it write at the moment it chooses.
        let thread = try EventLoopThread(name: "apns-conn-test")
        defer { thread.stopAndJoin() }
        let loop = thread.loop
        let endpoint = try Fixtures.endpoint(port: emulator.port)
        let owner = RecordingOwner()
        let connection = loop.runAndWait { () -> HTTP2Connection in
            let connection = HTTP2Connection(loop: loop, endpoint: endpoint, owner: owner)
            connection.start()
            return connection
        }
        #expect(eventually { loop.runAndWait { connection.state == .ready } })
        // One of the connection's two streams used.
        let warmUp = try Fixtures.notification(token: Fixtures.deviceToken(0))
        #expect(loop.runAndWait { connection.submit(PooledNotification(notification: warmUp) { _ in }) } == .submitted(streamID: 1))
        #expect(eventually { loop.runAndWait { owner.finished.count == 1 } })
        // The second request makes the emulator answer, send GOAWAY and close.
        let last = try Fixtures.notification(token: Fixtures.deviceToken(1))
        // Then several TLS records (16 KB each) of requests, within the
        // 64 KB flow-control window (30 payloads of about 2.05 KB; the
        // connection takes no more than the window admits): the first write
        // draws the RST, a later one fails with EPIPE.
        let late = try (2..<32).map { index in
            try makeNotification(
                target: RelayTarget(environment: .development, deviceToken: Fixtures.deviceToken(index), extra: nil),
                message: WebPushMessage(encoding: .aes128gcm, body: [UInt8](repeating: 0x42, count: 1600), ttl: 3600),
                topic: TestCertificates.bundleID, credential: .primary, apnsID: Fixtures.apnsID(), now: Int(time(nil))).notification
        }
        let all = [last] + late
        // All in one loop task, so the connection reads nothing in between. A
        // writable event (no readable one) makes the connection write now,
        // as when the server's close lands between a read and the write.
        let (wroteAfterClose, taken) = loop.runAndWait { () -> (Bool, Int) in
            _ = connection.submit(PooledNotification(notification: last) { _ in })
            connection.handleIO(.writable)
            // Bounded wait for the emulator's answer, GOAWAY and close: they
            // now sit unread in the client's socket.
            let deadline = EventLoop.monotonicNanoseconds() + 5_000_000_000
            while emulator.statistics.openConnections > 0 && EventLoop.monotonicNanoseconds() < deadline {
                usleep(1_000)
            }
            // The requests handed back go to a connection that takes them all.
            emulator.update { $0.goAwayAfterStreams = nil }
            // As a pool would: each goes where `canTake` says it fits.
            var taken = 0
            for notification in late where connection.canTake(bodyBytes: notification.payload.count) {
                if case .submitted = connection.submit(PooledNotification(notification: notification) { _ in }) { taken += 1 }
            }
            connection.handleIO(.writable)
            return (emulator.statistics.openConnections == 0, taken)
        }
        #expect(wroteAfterClose, "the emulator should have closed before the late writes")
        #expect(taken == late.count, "the window takes every late request")
        #expect(eventually(timeout: .seconds(20)) { loop.runAndWait { !owner.closes.isEmpty } })
        let (finished, returned, closes) = loop.runAndWait { (owner.finished, owner.returned, owner.closes) }
        // The answered request keeps its answer; everything above GOAWAY's
        // last-stream-id comes back unprocessed; the close is the server's
        // orderly one (GOAWAY, every owed answer, then the close), not a loss.
        #expect(finished.count == 2)
        #expect(finished.last?.request.notification.apnsID == last.apnsID)
        #expect(finished.last?.delivery.outcome == .apns(status: 200, reason: nil, apnsID: last.apnsID))
        #expect(returned.map(\.notification.apnsID) == late.map(\.apnsID))
        #expect(closes.count == 1)
        #expect(closes.first?.failure == nil)
        #expect(closes.first?.wasReady == true)
        // Sent again on a new connection, every one is accepted, once.
        let second = RecordingOwner()
        let again = loop.runAndWait { () -> HTTP2Connection in
            let connection = HTTP2Connection(loop: loop, endpoint: endpoint, owner: second)
            connection.start()
            return connection
        }
        #expect(eventually { loop.runAndWait { again.state == .ready } })
        let resent = loop.runAndWait { returned.filter { again.submit($0) != .refused }.count }
        #expect(resent == late.count)
        #expect(eventually(timeout: .seconds(20)) { loop.runAndWait { second.finished.count == late.count } })
        let outcomes = loop.runAndWait { second.finished.map(\.delivery.outcome) }
        let failures = outcomes.filter { !$0.isAccepted }
        #expect(failures.isEmpty, "\(failures.count) failed, first: \(String(describing: failures.first))")
        #expect(emulator.statistics.accepted == 1 + all.count)
        #expect(emulator.statistics.duplicateAPNsIDs == 0)
        #expect(Set(emulator.receivedNotifications().map(\.apnsID)).isSuperset(of: all.map(\.apnsID)))
        loop.runAndWait { again.drain() }
    }
}
