import EventLoop
import Foundation
import Glibc
import RelayCore
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
        configuration.connectTimeout = .milliseconds(300)
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
        configuration.pingInterval = .milliseconds(100)
        configuration.pingTimeout = .milliseconds(500)
        let client = try LoopClient(configuration)
        #expect(try client.send(Fixtures.notifications(count: 1)).outcomes.allSatisfy { if case .apns(200, _, _) = $0 { true } else { false } })
        #expect(eventually(timeout: 5) { client.status.counters.pingsSent >= 3 })
        #expect(client.status.connections[.ready] == 1)
        #expect(try client.send(Fixtures.notifications(count: 1, first: 5)).outcomes.allSatisfy { if case .apns(200, _, _) = $0 { true } else { false } })
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
        configuration.pingInterval = .milliseconds(100)
        configuration.pingTimeout = .milliseconds(300)
        let client = try LoopClient(configuration)
        #expect(try client.send(Fixtures.notifications(count: 1)).outcomes.allSatisfy { if case .apns(200, _, _) = $0 { true } else { false } })
        proxy.stall()
        #expect(eventually(timeout: 5) {
            if case .lost(let detail)? = client.status.lastConnectionLoss { return detail.contains("PING") }
            return false
        })
        #expect(client.status.connections[.ready] == nil)
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
    private let thread: Thread

    init(targetPort: UInt16) throws {
        listener = try Socket.listen(host: "127.0.0.1", port: 0)
        port = listener.localPort
        self.targetPort = targetPort
        let fd = listener.fileDescriptor
        let stalled = self.stalled
        let stopped = self.stopped
        thread = Thread {
            StallingProxy.run(listenerFD: fd, targetPort: targetPort, stalled: stalled, stopped: stopped)
        }
        thread.start()
    }

    func stall() { stalled.withLock { $0 = true } }

    func stop() {
        stopped.withLock { $0 = true }
        usleep(100_000)
        listener.close()
    }

    /// poll(2)-driven copy loop; bounded by `stopped`.
    private static func run(listenerFD: Int32, targetPort: UInt16, stalled: Locked<Bool>, stopped: Locked<Bool>) {
        var pairs: [(Int32, Int32)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.withLock({ $0 }) {
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
