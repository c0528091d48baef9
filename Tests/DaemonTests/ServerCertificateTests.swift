import Foundation
@testable import Daemon
import TestSupport
import Testing

/// CRT_FILENAME and KEY_FILENAME in a directory of their own, which a test
/// rewrites as certbot renews them.
private final class CertificateFiles {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("toot-relay-server-certificate-\(UUID().uuidString)").path
    var certificate: String { directory + "/fullchain.pem" }
    var key: String { directory + "/privkey.pem" }

    init(_ certificate: String, _ key: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try install(certificate, key)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func install(_ certificate: String, _ key: String) throws {
        try write(certificate, to: self.certificate)
        try write(key, to: self.key)
    }

    func write(_ name: String, to path: String) throws {
        try Data(TestCertificates.bytes(name)).write(to: URL(fileURLWithPath: path))
    }
}

@Suite("The relay's own HTTPS certificate, loaded and reloaded")
struct ServerCertificateTests {
    static let now = Int(Date().timeIntervalSince1970)

    @Test("files that did not change change nothing")
    func unchanged() throws {
        let files = try CertificateFiles(TestCertificates.serverCertificate, TestCertificates.serverKey)
        var certificate = try ServerCertificate(certificateFile: files.certificate, keyFile: files.key)
        let context = certificate.context
        #expect(certificate.reload(now: Self.now) == .unchanged)
        #expect(certificate.context === context)
    }

    @Test("a renewed certificate and key are served from the reload on")
    func renewed() throws {
        let files = try CertificateFiles(TestCertificates.serverCertificate, TestCertificates.serverKey)
        var certificate = try ServerCertificate(certificateFile: files.certificate, keyFile: files.key)
        let context = certificate.context
        try files.install(TestCertificates.otherServerCertificate, TestCertificates.otherServerKey)
        #expect(certificate.reload(now: Self.now) == .replaced)
        #expect(certificate.context !== context)
        #expect(certificate.reload(now: Self.now) == .unchanged)
    }

    @Test("files that do not load leave the running certificate in place", arguments: [
        // A key that is not the certificate's (the key renewed, the certificate not yet).
        (TestCertificates.serverCertificate, TestCertificates.otherServerKey, "private key does not belong to the certificate"),
        (TestCertificates.expiredClientCertificate, TestCertificates.expiredClientKey, "expired on 2021-01-01"),
        (TestCertificates.notAP12, TestCertificates.serverKey, "certificate"),
    ])
    func broken(certificateName: String, keyName: String, reason: String) throws {
        let files = try CertificateFiles(TestCertificates.serverCertificate, TestCertificates.serverKey)
        var certificate = try ServerCertificate(certificateFile: files.certificate, keyFile: files.key)
        let context = certificate.context
        let notAfter = certificate.notAfter
        try files.install(certificateName, keyName)
        let outcome = certificate.reload(now: Self.now)
        guard case .failed(let text) = outcome else {
            Issue.record("reloaded: \(outcome)")
            return
        }
        #expect(text.contains(reason), "\(text)")
        #expect(certificate.context === context && certificate.notAfter == notAfter)
        // Mended files load at the next reload.
        try files.install(TestCertificates.otherServerCertificate, TestCertificates.otherServerKey)
        #expect(certificate.reload(now: Self.now) == .replaced)
    }

    @Test("a missing file is a failed reload, and at start an error naming it")
    func missing() throws {
        let files = try CertificateFiles(TestCertificates.serverCertificate, TestCertificates.serverKey)
        var certificate = try ServerCertificate(certificateFile: files.certificate, keyFile: files.key)
        try FileManager.default.removeItem(atPath: files.key)
        guard case .failed(let text) = certificate.reload(now: Self.now) else {
            Issue.record("a missing key reloaded")
            return
        }
        #expect(text.contains(files.key))
        #expect(throws: ServerCertificateError.self) {
            try ServerCertificate(certificateFile: files.certificate, keyFile: files.key)
        }
    }
}
