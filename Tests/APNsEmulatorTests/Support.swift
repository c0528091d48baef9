import APNsCore
@testable import APNsEmulator
import EventLoop
import Foundation
import Glibc
import HTTP2
import HTTP2Transport
import HTTPCore
import TLS
import TestSupport

/// Shared helpers: emulator factories, a curl wrapper and a minimal
/// blocking HTTP/2 client built from our own TLS and HTTP2 modules.
enum Fixture {
    static let topic = TestCertificates.bundleID
    static let keyID = "KEYID12345"
    static let teamID = "TEAMID6789"
    static let payload = Array(#"{"aps":{"alert":"🎺","mutable-content":1},"p":"abc"}"#.utf8)
    /// An ordinary 64-digit token.
    static func token(_ index: Int = 0) -> String {
        let suffix = String(index, radix: 16)
        return String(repeating: "ab", count: 32).dropLast(suffix.count) + suffix
    }

    static func configuration(_ authentication: Authentication = .clientCertificate, record: Bool = true,
                              environment: APNsEnvironment = .production, expectedTopic: String? = nil,
                              threads: Int = 1,
                              behavior: APNsEmulatorBehavior = APNsEmulatorBehavior()) throws -> APNsEmulatorConfiguration {
        signal(SIGPIPE, SIG_IGN)
        let auth: APNsEmulatorAuthentication
        switch authentication {
        case .clientCertificate:
            auth = .clientCertificate(caFile: try TestCertificates.path(TestCertificates.caCertificate))
        case .clientCertificateAuthorities(let file):
            auth = .clientCertificate(caFile: try TestKeys.path(file))
        case .token:
            auth = .token(publicKeyPEM: try TestCertificates.bytes(TestCertificates.authKeyPublic), keyID: keyID,
                          teamID: teamID)
        case .providerKeys(let keys):
            auth = .providerKeys(try keys.map { try $0.configured() })
        case .clientCertificateOrProviderKeys(let file, let keys):
            auth = .clientCertificateOrProviderKeys(caFile: try TestKeys.path(file),
                                                    keys: try keys.map { try $0.configured() })
        case .none:
            auth = .none
        }
        return APNsEmulatorConfiguration(
            certificateFile: try TestCertificates.path(TestCertificates.serverCertificate),
            privateKeyFile: try TestCertificates.path(TestCertificates.serverKey),
            authentication: auth, environment: environment, expectedTopic: expectedTopic, threads: threads,
            recordNotifications: record, behavior: behavior)
    }

    enum Authentication {
        case clientCertificate
        /// Client certificates issued by the CAs in this TestKeys file.
        case clientCertificateAuthorities(String)
        /// The script's key alone, as `.token(publicKeyPEM:keyID:teamID:)`.
        case token
        case providerKeys([TestKeys.Key])
        /// Client certificates from the CAs in this TestKeys file, else
        /// provider tokens of these keys, per connection.
        case clientCertificateOrProviderKeys(String, [TestKeys.Key])
        case none
    }

    /// A started emulator; the caller stops it.
    static func emulator(_ authentication: Authentication = .clientCertificate, record: Bool = true,
                         environment: APNsEnvironment = .production, expectedTopic: String? = nil, threads: Int = 1,
                         behavior: APNsEmulatorBehavior = APNsEmulatorBehavior()) throws -> APNsEmulator {
        let emulator = try APNsEmulator(configuration: configuration(
            authentication, record: record, environment: environment, expectedTopic: expectedTopic, threads: threads,
            behavior: behavior))
        try emulator.start()
        return emulator
    }

    /// A provider token signed with the test p8 key.
    static func providerToken(keyID: String = keyID, teamID: String = teamID,
                              issuedAt: Int = Int(time(nil)), corruptSignature: Bool = false) throws -> String {
        try TestKeys.team.token(keyID: keyID, teamID: teamID, issuedAt: issuedAt, corruptSignature: corruptSignature)
    }
}

/// What curl saw.
struct CurlResult {
    var exitCode: Int32
    /// `%{http_code}`: 0 when no response arrived.
    var status: Int
    var headers: [String: String]
    var body: String
    var standardError: String

    /// The `reason` of an APNs error body.
    var reason: String? {
        guard let data = body.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object["reason"] as? String
    }
}

enum Curl {
    /// One request with curl (HTTP/2 over TLS, verifying the server with the
    /// test CA). `clientCertificate`: nil for none, else (cert, key) file names.
    static func request(port: UInt16, path: String, method: String = "POST", headers: [String] = [],
                        body: [UInt8]? = Fixture.payload,
                        clientCertificate: (String, String)? = (TestCertificates.clientCertificate, TestCertificates.clientKey),
                        maxTime: Int = 10) throws -> CurlResult {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var arguments = ["/usr/bin/curl", "-s", "-S", "--http2", "--max-time", String(maxTime),
                         "--cacert", try TestCertificates.path(TestCertificates.caCertificate),
                         "-X", method, "-D", scratch.appendingPathComponent("headers").path,
                         "-o", scratch.appendingPathComponent("body").path, "-w", "%{http_code}"]
        if let (certificate, key) = clientCertificate {
            arguments += ["--cert", try TestCertificates.path(certificate), "--key", try TestCertificates.path(key)]
        }
        for header in headers { arguments += ["-H", header] }
        if let body {
            let bodyFile = scratch.appendingPathComponent("payload")
            try Data(body).write(to: bodyFile)
            arguments += ["--data-binary", "@" + bodyFile.path]
        }
        arguments.append("https://localhost:\(port)\(path)")
        let result = try Subprocess.run(arguments)
        var headerMap: [String: String] = [:]
        if let text = try? String(contentsOf: scratch.appendingPathComponent("headers"), encoding: .utf8) {
            for line in text.split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headerMap[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                    .trimmingCharacters(in: .whitespaces)
            }
        }
        let bodyText = (try? String(contentsOf: scratch.appendingPathComponent("body"), encoding: .utf8)) ?? ""
        return CurlResult(exitCode: result.status, status: Int(result.standardOutputText) ?? -1,
                          headers: headerMap, body: bodyText, standardError: result.standardErrorText)
    }
}

struct TestClientError: Error, CustomStringConvertible {
    let description: String
}

/// A minimal blocking HTTP/2 client on one thread: TLS through our TLS
/// module, framing through HTTP2ClientSession, poll(2) for readiness.
/// Every wait is bounded by a deadline.
final class TestClient: HTTP2ClientSessionDelegate {
    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8] = []
        func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        var reason: String? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
            return object["reason"] as? String
        }
    }

    private let socket: Socket
    private let tls: TLSConnection
    private var session: HTTP2ClientSession!
    /// The same byte pump as the relay's connections; no back-pressure here
    /// (everything submitted is taken at once).
    private(set) var pump = HTTP2TLSPump(highWater: .max, keptCapacity: .max)
    /// Where each batch of frames the pump took begins (`framesSerialized`).
    private(set) var serializedOffsets: [UInt64] = []
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    private(set) var responses: [Int32: Response] = [:]
    private(set) var closedStreams: [Int32: HTTP2ErrorCode] = [:]
    /// Every SETTINGS_MAX_CONCURRENT_STREAMS value the server announced, in order.
    private(set) var announcedMaxStreams: [UInt32] = []
    private(set) var goAwayLastStreamID: Int32?
    /// The server closed the connection (EOF or error).
    private(set) var connectionClosed = false

    init(port: UInt16, certificate: String? = TestCertificates.clientCertificate,
         key: String? = TestCertificates.clientKey, timeout: Duration = .seconds(5)) throws {
        guard let address = SocketAddress(ip: "127.0.0.1", port: port) else { throw TestClientError(description: "address") }
        let (socket, _) = try Socket.connect(to: address)
        self.socket = socket
        var identity: TLSIdentity?
        if let certificate, let key {
            identity = try TLSIdentity.pem(certificateFile: TestCertificates.path(certificate),
                                           privateKeyFile: TestCertificates.path(key))
        }
        let context = try TLSContext.client(trustedRootsFile: TestCertificates.path(TestCertificates.caCertificate),
                                            identity: identity, alpn: ["h2"])
        tls = try TLSConnection(context: context, fd: socket.fileDescriptor, serverName: "localhost")
        let deadline = ContinuousClock.now + timeout
        handshake: while true {
            switch tls.handshake() {
            case .complete: break handshake
            case .wantRead: wait(read: true, write: false)
            case .wantWrite: wait(read: false, write: true)
            case .closed: throw TestClientError(description: "closed during handshake")
            case .failed(let error): throw error
            }
            guard ContinuousClock.now < deadline else { throw TestClientError(description: "handshake timed out") }
        }
        session = try HTTP2ClientSession(delegate: self)
    }

    deinit {
        readBuffer.deallocate()
    }

    private func wait(read: Bool, write: Bool, milliseconds: Int32 = 20) {
        var descriptor = pollfd(fd: socket.fileDescriptor,
                                events: Int16((read ? POLLIN : 0) | (write ? POLLOUT : 0)), revents: 0)
        _ = poll(&descriptor, 1, milliseconds)
    }

    /// Queues a POST to /3/device/<token> (or `path`).
    @discardableResult
    func submit(token: String = Fixture.token(), path: String? = nil, method: String = "POST",
                headers: [(name: String, value: String)] = [("apns-topic", Fixture.topic)],
                body: [UInt8] = Fixture.payload) throws -> Int32 {
        try session.submitRequest(method: method, path: path ?? "/3/device/\(token)", authority: "localhost",
                                  fields: headers.map { HTTPField(name: $0.name, value: $0.value) }, body: body)
    }

    /// Moves bytes until `condition` holds or `timeout` passes; true when it held.
    @discardableResult
    func run(timeout: Duration = .seconds(5), until condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            moveBytes()
            if condition() { return true }
            if connectionClosed || ContinuousClock.now >= deadline { return condition() }
            wait(read: true, write: pump.pendingBytes > 0)
        }
    }

    /// Runs until every given stream is closed.
    func runUntilClosed(_ streams: [Int32], timeout: Duration = .seconds(5)) -> Bool {
        run(timeout: timeout) { streams.allSatisfy { closedStreams[$0] != nil } }
    }

    /// Writes what the session has, then reads (at most 64 reads) and feeds it.
    private func moveBytes() {
        guard !connectionClosed else { return }
        switch pump.write(session, through: tls, host: self) {
        case .flushed, .wantWrite, .wantRead:
            break
        case .closed, .failed:
            connectionClosed = true
            return
        }
        let pass = HTTP2TLSPump.readAndFeed(session, from: tls, into: readBuffer, maxReads: 64, host: self)
        switch pass.stop {
        case .wantRead, .wantWrite, .stoppedByHost, .yielded:
            break
        case .closed, .failed, .protocolError:
            connectionClosed = true
        }
    }

    // MARK: HTTP2ClientSessionDelegate

    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int,
                 fields: HTTP2HeaderFields, streamID: Int32) {
        responses[streamID] = Response(status: status, headers: Array(fields))
    }

    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        responses[streamID]?.body.append(contentsOf: bytes)
    }

    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
        closedStreams[streamID] = errorCode
    }

    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {
        announcedMaxStreams.append(maxConcurrentStreams)
    }

    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode,
                 debugData: String) {
        goAwayLastStreamID = lastStreamID
    }

    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64) {}
}

extension TestClient: HTTP2TLSPumpHost {
    var keepsReading: Bool { true }
    func framesSerialized(at offset: UInt64) {
        serializedOffsets.append(offset)
    }
}
