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

/// A TCP relay between the client and a server that can stop forwarding
/// (a peer that hangs without closing), on its own thread.
final class StallingProxy: @unchecked Sendable {
    let port: UInt16
    private let listener: Socket
    private let targetPort: UInt16
    private let stalled = Locked(false)
    private let stopped = Locked(false)
    private let closeRequested = Locked(false)
    private let closed = DispatchSemaphore(value: 0)
    private let thread: Thread

    init(targetPort: UInt16) throws {
        listener = try Socket.listen(host: "127.0.0.1", port: 0)
        port = listener.localPort
        self.targetPort = targetPort
        let fd = listener.fileDescriptor
        let stalled = self.stalled
        let stopped = self.stopped
        let closeRequested = self.closeRequested
        let closed = self.closed
        thread = Thread {
            StallingProxy.run(listenerFD: fd, targetPort: targetPort, stalled: stalled, stopped: stopped, closed: closed,
                              closeRequested: closeRequested)
        }
        thread.start()
    }

    func stall() { stalled.withLock { $0 = true } }

    /// Closes both sides of every relayed connection at the next poll round;
    /// true once the client's side acknowledged the FIN (within 5 s).
    func closeConnections() -> Bool {
        closeRequested.withLock { $0 = true }
        return closed.wait(timeout: .now() + 5) == .success
    }

    func stop() {
        stopped.withLock { $0 = true }
        usleep(100_000)
        listener.close()
    }

    /// Polls the socket's TCP state until our FIN was acknowledged.
    private static func waitForFINAcknowledged(_ fd: Int32, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var info = tcp_info()
            var length = socklen_t(MemoryLayout<tcp_info>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return false }
            let state = Int(info.tcpi_state)
            if state != TCP_ESTABLISHED && state != TCP_FIN_WAIT1 { return true }
            usleep(1_000)
        }
        return false
    }

    /// poll(2)-driven copy loop; bounded by `stopped`.
    private static func run(listenerFD: Int32, targetPort: UInt16, stalled: Locked<Bool>, stopped: Locked<Bool>,
                            closed: DispatchSemaphore, closeRequested: Locked<Bool>) {
        var pairs: [(Int32, Int32)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.withLock({ $0 }) {
            if closeRequested.withLock({ value in
                defer { value = false }
                return value
            }) {
                // close(2) returns before loopback delivers the FIN (its
                // softirq can wait behind a loaded machine's threads, well
                // beyond 200 ms in CI). The peer's kernel acknowledges the FIN
                // as it queues it on the peer's socket: FIN_WAIT2 says the
                // close is there.
                var acknowledged = true
                for (a, b) in pairs {
                    close(b)
                    shutdown(a, Int32(SHUT_WR))
                    acknowledged = acknowledged && StallingProxy.waitForFINAcknowledged(a, timeout: 5)
                    close(a)
                }
                pairs.removeAll()
                if acknowledged { closed.signal() }
            }
            var fds = [pollfd(fd: listenerFD, events: Int16(POLLIN), revents: 0)]
            for (a, b) in pairs {
                fds.append(pollfd(fd: a, events: Int16(POLLIN), revents: 0))
                fds.append(pollfd(fd: b, events: Int16(POLLIN), revents: 0))
            }
            guard poll(&fds, nfds_t(fds.count), 20) > 0 else { continue }
            let polledPairs = pairs.count
            if fds[0].revents & Int16(POLLIN) != 0 {
                let client = accept(listenerFD, nil, nil)
                if client >= 0 {
                    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                    var address = sockaddr_in()
                    address.sin_family = sa_family_t(AF_INET)
                    address.sin_port = targetPort.bigEndian
                    address.sin_addr.s_addr = inet_addr("127.0.0.1")
                    let connected = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                    if connected == 0 { pairs.append((client, server)) } else { close(client); close(server) }
                }
            }
            if stalled.withLock({ $0 }) { continue }
            var closed: Set<Int> = []
            for (index, (a, b)) in pairs.prefix(polledPairs).enumerated() {
                for (from, to, slot) in [(a, b, 1 + index * 2), (b, a, 2 + index * 2)]
                where fds[slot].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                    if count <= 0 {
                        closed.insert(index)
                        continue
                    }
                    var offset = 0
                    while offset < count {
                        let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + offset, count - offset) }
                        if written <= 0 { break }
                        offset += written
                    }
                }
            }
            for index in closed.sorted(by: >) {
                close(pairs[index].0)
                close(pairs[index].1)
                pairs.remove(at: index)
            }
        }
        for (a, b) in pairs {
            close(a)
            close(b)
        }
    }
}

/// Interop with an HTTP/2 implementation that is not nghttp2 (ARCHITECTURE.md §9):
/// nginx with TLS, `http2` and `ssl_verify_client on`, answering the APNs
/// path with 200 and the request's apns-id.
@Suite("APNs client against nginx", .serialized)
struct APNsNginxInteropTests {
    @Test("nginx over HTTP/2 with a required client certificate answers every notification")
    func nginxSuccess() throws {
        let nginx = try Nginx()
        defer { nginx.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: nginx.http2Port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity()),
            host: "localhost"))
        let notifications = try Fixtures.notifications(count: 50)
        let results = try client.send(notifications)
        #expect(results.completionCounts.allSatisfy { $0 == 1 })
        for (notification, outcome) in zip(notifications, results.outcomes) {
            #expect(outcome == .apns(status: 200, reason: nil, apnsID: notification.apnsID))
        }
        #expect(try nginx.accessLogLines().filter { $0.contains("POST /3/device/") && $0.contains("HTTP/2.0\" 200") }.count == 50)
        #expect(client.shutdown())
    }

    @Test("nginx rejects a client without a certificate: no 200 is ever reported")
    func nginxWithoutClientCertificate() throws {
        let nginx = try Nginx()
        defer { nginx.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: nginx.http2Port, context: Fixtures.tlsContext(identity: nil), host: "localhost"))
        let outcome = try client.send(Fixtures.notifications(count: 1)).outcomes[0]
        // nginx completes the handshake and answers 400 ("No required SSL
        // certificate was sent") over HTTP/2.
        if case .apns(let status, _, _) = outcome {
            #expect(status == 400)
        } else {
            Issue.record("got \(outcome)")
        }
    }

    @Test("a TLS server without h2 in ALPN is refused before any request")
    func nginxWithoutHTTP2() throws {
        let nginx = try Nginx()
        defer { nginx.stop() }
        let client = try LoopClient(Fixtures.configuration(
            port: nginx.http1Port, context: Fixtures.tlsContext(identity: Fixtures.clientIdentity()),
            host: "localhost"))
        let outcome = try client.send(Fixtures.notifications(count: 1)).outcomes[0]
        guard case .tlsFailed(let detail) = outcome else {
            Issue.record("got \(outcome)")
            return
        }
        // nginx refuses an h2-only offer with no_application_protocol; a
        // server that picks no ALPN at all is refused by the client itself
        // (APNsConnectionMachineTests).
        #expect(detail.contains("ALPN") || detail.contains("h2"), "\(detail)")
        #expect(try nginx.accessLogLines().isEmpty)
    }
}

/// nginx (Debian package) in a temporary prefix, `daemon off`, on two free
/// 127.0.0.1 ports: one `ssl http2`, one `ssl` only. Stopped by its PID.
final class Nginx {
    let directory: String
    let http2Port: UInt16
    let http1Port: UInt16
    private let process: Process

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("apns-nginx-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        http2Port = try HTTPTestServer.closedPort()
        http1Port = try HTTPTestServer.closedPort()
        let certificate = try Fixtures.path(TestCertificates.serverCertificate)
        let key = try Fixtures.path(TestCertificates.serverKey)
        let ca = try Fixtures.path(TestCertificates.caCertificate)
        let tls = """
                ssl_certificate \(certificate);
                ssl_certificate_key \(key);
                ssl_client_certificate \(ca);
                ssl_verify_client on;
                ssl_protocols TLSv1.2 TLSv1.3;
                location /3/device/ {
                    add_header apns-id $http_apns_id always;
                    return 200;
                }
        """
        let configuration = """
        \(getuid() == 0 ? "user root root;" : "")
        worker_processes 1;
        daemon off;
        master_process on;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 256; }
        http {
            access_log \(directory)/access.log;
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            server {
                listen 127.0.0.1:\(http2Port) ssl http2;
        \(tls)
            }
            server {
                listen 127.0.0.1:\(http1Port) ssl;
        \(tls)
            }
        }
        """
        try configuration.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Bounded wait until both ports accept connections.
        guard eventually(timeout: .seconds(10), { Nginx.accepts(self.http2Port) && Nginx.accepts(self.http1Port) }) else {
            stop()
            let log = (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? ""
            throw HarnessError(description: "nginx did not start: \(log)")
        }
    }

    func accessLogLines() throws -> [String] {
        let text = (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// SIGTERM to the master we started (it stops its worker), then cleanup.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            _ = eventually(timeout: .seconds(5)) { !self.process.isRunning }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func accepts(_ port: UInt16) -> Bool {
        guard let address = SocketAddress(ip: "127.0.0.1", port: port),
              let (socket, progress) = try? Socket.connect(to: address) else { return false }
        defer { socket.close() }
        if progress == .connected { return true }
        var descriptor = pollfd(fd: socket.fileDescriptor, events: Int16(POLLOUT), revents: 0)
        guard poll(&descriptor, 1, 200) == 1 else { return false }
        return socket.pendingConnectError() == nil
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
        let connection = loop.runAndWait { () -> APNsConnection in
            let connection = APNsConnection(loop: loop, endpoint: endpoint, owner: owner)
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
        let again = loop.runAndWait { () -> APNsConnection in
            let connection = APNsConnection(loop: loop, endpoint: endpoint, owner: second)
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
