import Glibc
import Testing
import TestSupport
import TLS

/// One side of a bulk transfer: what it must send, what it has received.
final class Transfer {
    let connection: TLSConnection
    let fd: Int32
    let outgoing: [UInt8]
    var sent = 0
    var received: [UInt8] = []
    var wantsWritable = false
    var wantsReadableForWrite = false
    var failure: TLSIOResult?
    var sawBufferedData = false

    init(_ connection: TLSConnection, fd: Int32, outgoing: [UInt8]) {
        self.connection = connection
        self.fd = fd
        self.outgoing = outgoing
    }

    /// Writes until the socket is full, then reads once plus whatever OpenSSL
    /// still buffers (what an epoll loop must do: SSL_pending is invisible to epoll).
    func step(readBufferSize: Int) {
        wantsWritable = false
        wantsReadableForWrite = false
        while sent < outgoing.count && failure == nil {
            let result = outgoing.withUnsafeBytes { bytes in
                connection.write(UnsafeRawBufferPointer(rebasing: bytes[sent...]))
            }
            switch result {
            case .bytes(let count): sent += count
            case .wantWrite: wantsWritable = true
            case .wantRead: wantsReadableForWrite = true
            case .closed, .failed: failure = result
            }
            if wantsWritable || wantsReadableForWrite { break }
        }
        var buffer = [UInt8](repeating: 0, count: readBufferSize)
        var first = true
        while failure == nil && (first || connection.hasBufferedReadData) {
            if !first { sawBufferedData = true }
            first = false
            let result = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
            switch result {
            case .bytes(let count): received.append(contentsOf: buffer[0..<count])
            case .wantRead: return
            case .wantWrite:
                wantsWritable = true
                return
            case .closed, .failed: failure = result
            }
        }
    }
}

@Suite("TLS connections")
struct TLSConnectionTests {
    @Test("client and server complete a handshake with a client certificate and agree on h2")
    func handshakeWithClientCertificate() throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        #expect(client == .complete)
        #expect(server == .complete)
        #expect(peers.client.negotiatedALPN == "h2")
        #expect(peers.server.negotiatedALPN == "h2")
        #expect(peers.server.peerCertificateSubjectUID == TestCertificates.bundleID)
        #expect(peers.server.hasVerifiedPeerCertificate)
        #expect(peers.client.peerCertificateSubjectCommonName == "localhost")
        #expect(peers.client.peerCertificateSubjectUID == nil)
        #expect(peers.client.protocolVersion == "TLSv1.3")
    }

    @Test("over TLS 1.2 the handshake with a client certificate and h2 completes too")
    func handshakeTLS12() throws {
        var setup = Setup()
        setup.serverLimitedToTLS12 = true
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        #expect(client == .complete)
        #expect(server == .complete)
        #expect(peers.client.protocolVersion == "TLSv1.2")
        #expect(peers.client.negotiatedALPN == "h2")
        #expect(peers.server.peerCertificateSubjectUID == TestCertificates.bundleID)
    }

    @Test("over TLS 1.2 a rejected client certificate fails the client's own handshake", arguments: [
        TestCertificates.otherClientCertificate, nil,
    ] as [String?])
    func rejectedClientTLS12(identity: String?) throws {
        var setup = Setup()
        setup.serverLimitedToTLS12 = true
        setup.clientIdentity = identity
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        guard case .failed(let clientError) = client, case .failed = server else {
            Issue.record("client \(client), server \(server)")
            return
        }
        #expect(clientError.kind == .handshakeFailed)
        #expect(clientError.description.contains("alert"))
    }

    @Test("a legacy p12 and a PEM identity work as client certificates", arguments: [
        TestCertificates.clientP12Legacy, TestCertificates.clientCertificate,
    ])
    func otherClientIdentityForms(identity: String) throws {
        var setup = Setup()
        setup.clientIdentity = identity
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        #expect(client == .complete)
        #expect(server == .complete)
        #expect(peers.server.peerCertificateSubjectUID == TestCertificates.bundleID)
    }

    @Test("more than 64 KiB flows both ways at once through partial writes and buffered reads", arguments: [1_000, 16_384])
    func bulkTransfer(readBufferSize: Int) throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        try #require(client == .complete && server == .complete)
        let toServer = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let toClient = (0..<200_003).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        let clientSide = Transfer(peers.client, fd: peers.sockets.client, outgoing: toServer)
        let serverSide = Transfer(peers.server, fd: peers.sockets.server, outgoing: toClient)
        var sawWantWrite = false
        let deadline = ContinuousClock.now + .seconds(20)
        for _ in 0..<100_000 {
            clientSide.step(readBufferSize: readBufferSize)
            serverSide.step(readBufferSize: readBufferSize)
            sawWantWrite = sawWantWrite || clientSide.wantsWritable || serverSide.wantsWritable
            let done = clientSide.received.count >= toClient.count && serverSide.received.count >= toServer.count
            if done || clientSide.failure != nil || serverSide.failure != nil || ContinuousClock.now > deadline { break }
            waitForSockets([
                (peers.sockets.client, true, clientSide.wantsWritable),
                (peers.sockets.server, true, serverSide.wantsWritable),
            ], milliseconds: 20)
        }
        #expect(clientSide.failure == nil)
        #expect(serverSide.failure == nil)
        #expect(serverSide.received == toServer)
        #expect(clientSide.received == toClient)
        // The socket pair's buffers are smaller than 300 KB: writes must have blocked.
        #expect(sawWantWrite)
        if readBufferSize < 16_384 {
            // Records are up to 16 KiB: a 1000-byte read leaves the rest inside OpenSSL.
            #expect(clientSide.sawBufferedData || serverSide.sawBufferedData)
        }
    }

    @Test("with read-ahead, many small records sent at once are all read back until wantRead, which empties OpenSSL")
    func readAheadReadsEveryRecord() throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        try #require(client == .complete && server == .complete)
        peers.client.enableReadAhead()
        // 50 writes, 50 records of 100 bytes, all in the socket before the first read.
        var expected: [UInt8] = []
        for index in 0..<50 {
            let record = [UInt8](repeating: UInt8(index), count: 100)
            expected += record
            #expect(record.withUnsafeBytes { peers.server.write($0) } == .bytes(100))
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 150)
        var sawHeldInput = false
        for _ in 0..<1_000 {
            let result = buffer.withUnsafeMutableBytes { peers.client.read(into: $0) }
            guard case .bytes(let count) = result else {
                #expect(result == .wantRead)
                break
            }
            received += buffer[0..<count]
            // Records already taken from the socket wait inside OpenSSL.
            if peers.client.hasUnprocessedInput { sawHeldInput = true }
        }
        #expect(received == expected)
        #expect(sawHeldInput)
        #expect(!peers.client.hasUnprocessedInput)
    }

    @Test("close_notify from the client reads as closed on the server; the fd stays the caller's")
    func orderlyClose() throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        try #require(client == .complete && server == .complete)
        peers.client.shutdown()
        #expect(readUntilOutcome(peers.server, fd: peers.sockets.server) == .closed)
        // SSL_set_fd does not take the descriptor: it is still open.
        #expect(fcntl(peers.sockets.client, F_GETFD) >= 0)
    }

    @Test("the peer closing the socket without close_notify reads as closed")
    func abruptClose() throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        try #require(client == .complete && server == .complete)
        // Consume the server's session tickets first: closing a socket with
        // unread data makes the kernel reset the connection instead.
        #expect(readUntilOutcome(peers.client, fd: peers.sockets.client, maximumWaits: 3) == .wantRead)
        peers.sockets.closeClient()
        #expect(readUntilOutcome(peers.server, fd: peers.sockets.server) == .closed)
    }

    @Test("a peer resetting the connection is a syscall failure carrying errno")
    func resetConnection() throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        try #require(client == .complete && server == .complete)
        // The client never read the server's session tickets: close → reset.
        peers.sockets.closeClient()
        let outcome = readUntilOutcome(peers.server, fd: peers.sockets.server)
        #expect(outcome == .failed(TLSError(.syscall(ECONNRESET), "Connection reset by peer")))
    }

    @Test("a server name is verified against the certificate: DNS and IP SANs", arguments: [
        ("localhost", nil),
        ("127.0.0.1", nil),
        ("wrong.example", "hostname mismatch"),
        ("127.0.0.2", "IP address mismatch"),
    ] as [(String, String?)])
    func serverNameVerification(name: String, expectedFailure: String?) throws {
        var setup = Setup()
        setup.serverName = name
        let peers = try Peers(setup)
        let (client, _) = peers.handshake()
        if let expectedFailure {
            #expect(verifyReason(client) == expectedFailure)
            if case .failed(let error) = client {
                #expect(error.description == "certificate verify failed: \(expectedFailure)")
            }
        } else {
            #expect(client == .complete)
        }
    }

    @Test("a server whose certificate comes from an untrusted CA fails verification")
    func untrustedServer() throws {
        var setup = Setup()
        setup.serverCertificate = TestCertificates.otherServerCertificate
        setup.serverKey = TestCertificates.otherServerKey
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        #expect(verifyReason(client) == "unable to get local issuer certificate")
        #expect(server != .complete)
    }

    @Test("system roots (no roots file) do not trust the test CA")
    func systemRoots() throws {
        var setup = Setup()
        setup.clientTrustedRoots = nil
        let peers = try Peers(setup)
        let (client, _) = peers.handshake()
        #expect(verifyReason(client) == "unable to get local issuer certificate")
    }

    @Test("a client certificate from another CA is rejected by the server and the client sees a failure")
    func clientFromOtherCA() throws {
        var setup = Setup()
        setup.clientIdentity = TestCertificates.otherClientCertificate
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        #expect(verifyReason(server) == "unable to get local issuer certificate")
        // In TLS 1.3 the client's handshake is over before the server has
        // judged its certificate: the alert arrives on the first read.
        if client == .complete {
            #expect(isFailure(readUntilOutcome(peers.client, fd: peers.sockets.client)))
        } else {
            #expect(client != .wantRead && client != .wantWrite)
        }
    }

    @Test("a server requiring a client certificate fails a client that offers none")
    func missingClientCertificate() throws {
        var setup = Setup()
        setup.clientIdentity = nil
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        guard case .failed(let error) = server else {
            Issue.record("server: \(server)")
            return
        }
        #expect(error.kind == .handshakeFailed)
        #expect(error.description.contains("peer did not return a certificate"))
        if client == .complete {
            let outcome = readUntilOutcome(peers.client, fd: peers.sockets.client)
            #expect(isFailure(outcome))
            if case .failed(let clientError) = outcome {
                #expect(clientError.description.contains("certificate required"))
            }
        } else {
            #expect(client != .wantRead && client != .wantWrite)
        }
    }

    @Test("a server without a client CA file accepts clients without certificates")
    func noClientAuthentication() throws {
        var setup = Setup()
        setup.clientCAFile = nil
        setup.clientIdentity = nil
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        #expect(client == .complete)
        #expect(server == .complete)
        #expect(peers.server.peerCertificateSubjectUID == nil)
        #expect(!peers.server.hasVerifiedPeerCertificate)
    }

    /// An APNs host serves certificate-based and token-based providers
    /// alike: it asks for a certificate without requiring one.
    @Test("a server that requests but does not require client certificates", arguments: [
        (nil, true, false),
        (TestCertificates.clientP12, true, true),
        (TestCertificates.otherClientCertificate, false, false),
    ] as [(String?, Bool, Bool)])
    func requestedClientCertificate(identity: String?, completes: Bool, verified: Bool) throws {
        var setup = Setup()
        setup.requireClientCertificate = false
        setup.clientIdentity = identity
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        if completes {
            #expect(client == .complete)
            #expect(server == .complete)
            #expect(peers.server.hasVerifiedPeerCertificate == verified)
            #expect(peers.server.peerCertificateSubjectUID == (verified ? TestCertificates.bundleID : nil))
        } else {
            // A certificate presented must still verify.
            #expect(verifyReason(server) == "unable to get local issuer certificate")
            #expect(!peers.server.hasVerifiedPeerCertificate)
            if client == .complete {
                #expect(isFailure(readUntilOutcome(peers.client, fd: peers.sockets.client)))
            }
        }
    }

    @Test("no ALPN protocol in common is a fatal no_application_protocol alert on both sides")
    func alpnMismatch() throws {
        var setup = Setup()
        setup.serverALPN = ["http/1.1"]
        setup.clientALPN = ["h2"]
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        guard case .failed(let serverError) = server, case .failed(let clientError) = client else {
            Issue.record("client \(client), server \(server)")
            return
        }
        #expect(serverError.kind == .alpnMismatch)
        #expect(clientError.kind == .alpnMismatch)
    }

    @Test("ALPN follows the server's preference; no offer or no server list means no protocol", arguments: [
        (["http/1.1", "h2"], ["h2", "http/1.1"], "h2"),
        (["h2", "http/1.1"], ["http/1.1", "h2"], "http/1.1"),
        ([], ["h2"], nil),
        (["h2"], [], nil),
    ] as [([String], [String], String?)])
    func alpnSelection(clientALPN: [String], serverALPN: [String], expected: String?) throws {
        var setup = Setup()
        setup.clientALPN = clientALPN
        setup.serverALPN = serverALPN
        let peers = try Peers(setup)
        let (client, server) = peers.handshake()
        #expect(client == .complete)
        #expect(server == .complete)
        #expect(peers.client.negotiatedALPN == expected)
        #expect(peers.server.negotiatedALPN == expected)
    }

    @Test("a peer speaking something other than TLS fails the handshake with a protocol error")
    func garbageFromPeer() throws {
        let peers = try Peers()
        let garbage = Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)
        let written = garbage.withUnsafeBytes { Glibc.write(peers.sockets.server, $0.baseAddress, $0.count) }
        try #require(written == garbage.count)
        var result = peers.client.handshake()
        for _ in 0..<100 where result == .wantRead || result == .wantWrite {
            waitForSockets([(peers.sockets.client, true, false)])
            result = peers.client.handshake()
        }
        guard case .failed(let error) = result else {
            Issue.record("client: \(result)")
            return
        }
        #expect(error.kind == .handshakeFailed)
        #expect(error.description.contains("wrong version number"))
        // After a fatal error, shutdown must not touch OpenSSL (and must not crash).
        peers.client.shutdown()
    }

    @Test("an empty read or write buffer is a no-op")
    func emptyBuffers() throws {
        let peers = try Peers()
        let (client, server) = peers.handshake()
        try #require(client == .complete && server == .complete)
        #expect(peers.client.write(UnsafeRawBufferPointer(start: nil, count: 0)) == .bytes(0))
        #expect(peers.client.read(into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) == .bytes(0))
    }

    @Test("an empty server name or one with a NUL byte is refused", arguments: ["", "local\u{0}host"])
    func invalidServerName(name: String) throws {
        let context = try TLSContext.client(trustedRootsFile: nil, identity: nil, alpn: ["h2"])
        let sockets = try SocketPair()
        let error = #expect(throws: TLSError.self) { try TLSConnection(context: context, fd: sockets.client, serverName: name) }
        #expect(error?.kind == .configuration)
    }
}
