import EventLoop
import Foundation
import Glibc
import Testing
import TestSupport
@testable import APNs

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
        // (HTTP2ConnectionMachineTests).
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
