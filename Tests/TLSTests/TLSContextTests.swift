import Testing
import TestSupport
import TLS

@Suite("TLS contexts")
struct TLSContextTests {
    @Test("the linked library is OpenSSL 3")
    func openSSLVersion() {
        #expect(TLSContext.openSSLVersion.hasPrefix("OpenSSL 3."))
    }

    @Test("a client context can use the system roots and offer h2")
    func clientWithSystemRoots() throws {
        _ = try TLSContext.client(trustedRootsFile: nil, identity: nil, alpn: ["h2"])
    }

    @Test("an unreadable roots file is a configuration error naming it")
    func missingRootsFile() {
        let error = #expect(throws: TLSError.self) {
            try TLSContext.client(trustedRootsFile: "/nonexistent/roots.pem", identity: nil, alpn: ["h2"])
        }
        #expect(error?.kind == .configuration)
        #expect(error?.description.contains("/nonexistent/roots.pem") == true)
    }

    @Test("a roots file that holds no certificate is refused")
    func rootsFileWithoutCertificates() throws {
        let path = try TestCertificates.path(TestCertificates.notAP12)
        let error = #expect(throws: TLSError.self) {
            try TLSContext.client(trustedRootsFile: path, identity: nil, alpn: [])
        }
        #expect(error?.kind == .configuration)
    }

    @Test("an unreadable client CA file is a configuration error")
    func missingClientCAFile() throws {
        let identity = try TLSIdentity.pem(
            certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
            privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let error = #expect(throws: TLSError.self) {
            try TLSContext.server(identity: identity, alpn: ["h2"], clientCAFile: "/nonexistent/ca.pem")
        }
        #expect(error?.kind == .configuration)
    }

    @Test("ALPN names must be 1 to 255 bytes", arguments: [
        [""], [String(repeating: "x", count: 256)], ["h2", ""],
    ])
    func invalidALPN(alpn: [String]) throws {
        let clientError = #expect(throws: TLSError.self) {
            try TLSContext.client(trustedRootsFile: nil, identity: nil, alpn: alpn)
        }
        #expect(clientError?.kind == .configuration)
        let identity = try TLSIdentity.pem(
            certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
            privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        let serverError = #expect(throws: TLSError.self) {
            try TLSContext.server(identity: identity, alpn: alpn, clientCAFile: nil)
        }
        #expect(serverError?.kind == .configuration)
    }

    @Test("a context outlives the identity's Swift owner and connections outlive the context's")
    func lifetimes() throws {
        var context: TLSContext? = try TLSContext.server(
            identity: TLSIdentity.pem(
                certificateFile: TestCertificates.path(TestCertificates.serverCertificate),
                privateKeyFile: TestCertificates.path(TestCertificates.serverKey)),
            alpn: ["h2"], clientCAFile: nil)
        let sockets = try SocketPair()
        let server = try TLSConnection(context: try #require(context), fd: sockets.server, serverName: nil)
        context = nil
        let client = try TLSConnection(
            context: TLSContext.client(trustedRootsFile: TestCertificates.path(TestCertificates.caCertificate), identity: nil, alpn: ["h2"]),
            fd: sockets.client, serverName: "localhost")
        let (clientResult, serverResult) = driveHandshakes(client, server, sockets: sockets)
        #expect(clientResult == .complete)
        #expect(serverResult == .complete)
        #expect(server.negotiatedALPN == "h2")
    }
}
