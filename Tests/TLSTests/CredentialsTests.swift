import Testing
import TestSupport
@testable import TLS

@Suite("Credentials")
struct CredentialsTests {
    static let clientSubjectCN = "Apple Push Services: com.example.tootrelay.test"

    @Test("p12 files load with their password and carry the bundle id in the subject UID", arguments: [
        (TestCertificates.clientP12, TestCertificates.p12Password),
        (TestCertificates.clientP12WithoutPassword, ""),
        (TestCertificates.clientP12Legacy, TestCertificates.p12Password),
    ])
    func loadsP12(file: String, password: String) throws {
        let identity = try TLSIdentity.pkcs12(TestCertificates.bytes(file), password: password)
        #expect(identity.subjectUID == TestCertificates.bundleID)
        #expect(identity.subjectCommonName == Self.clientSubjectCN)
        #expect(identity.chainLength == 1)
        #expect(identity.notBefore < identity.notAfter)
        try identity.validate(now: identity.notBefore + 60)
    }

    @Test("loading a p12 by path gives the same identity as loading its bytes")
    func loadsP12File() throws {
        let identity = try TLSIdentity.pkcs12(file: TestCertificates.path(TestCertificates.clientP12), password: "secret")
        #expect(identity.subjectUID == TestCertificates.bundleID)
    }

    @Test("a wrong password is reported as such, for modern and legacy p12", arguments: [
        (TestCertificates.clientP12, "not-the-password"),
        (TestCertificates.clientP12Legacy, "not-the-password"),
        (TestCertificates.clientP12, ""),
        (TestCertificates.clientP12WithoutPassword, "secret"),
    ])
    func wrongPassword(file: String, password: String) throws {
        let bytes = try TestCertificates.bytes(file)
        #expect(throws: CredentialError.wrongPassword) { try TLSIdentity.pkcs12(bytes, password: password) }
        #expect(CredentialError.wrongPassword.description == "wrong password for the PKCS#12 file")
    }

    @Test("a file that is not PKCS#12 says so")
    func notAP12() throws {
        let error = try #require(throws: CredentialError.self) {
            try TLSIdentity.pkcs12(TestCertificates.bytes(TestCertificates.notAP12), password: "secret")
        }
        guard case .notPKCS12 = error else { Issue.record("got \(error)"); return }
        #expect(error.description.hasPrefix("not a PKCS#12 (.p12) file: "))
        #expect(!error.description.contains("\n"))
    }

    @Test("a PEM certificate handed in as p12 is not a p12")
    func pemIsNotAP12() throws {
        let error = try #require(throws: CredentialError.self) {
            try TLSIdentity.pkcs12(TestCertificates.bytes(TestCertificates.clientCertificate), password: "")
        }
        guard case .notPKCS12 = error else { Issue.record("got \(error)"); return }
    }

    @Test("a p12 with a damaged payload fails with a typed error, never loads")
    func damagedP12() throws {
        var bytes = try TestCertificates.bytes(TestCertificates.clientP12)
        // Flip one byte in the middle (inside the encrypted safe contents).
        bytes[bytes.count / 2] ^= 0xFF
        let error = try #require(throws: CredentialError.self) { try TLSIdentity.pkcs12(bytes, password: "secret") }
        switch error {
        // The MAC covers the payload, so OpenSSL cannot tell this from a wrong password.
        case .notPKCS12, .corruptPKCS12, .wrongPassword: break
        default: Issue.record("unexpected \(error)")
        }
    }

    @Test("an empty file is not a p12")
    func emptyP12() {
        #expect(throws: CredentialError.self) { try TLSIdentity.pkcs12([], password: "") }
    }

    @Test("a p12 holding only a certificate has no private key")
    func certificateOnlyP12() throws {
        let bytes = try TestCertificates.bytes(TestCertificates.clientP12CertificateOnly)
        #expect(throws: CredentialError.noPrivateKey) { try TLSIdentity.pkcs12(bytes, password: "secret") }
    }

    @Test("an expired certificate loads, and validate throws expired with its date")
    func expiredCertificate() throws {
        let identity = try TLSIdentity.pkcs12(TestCertificates.bytes(TestCertificates.expiredClientP12), password: "secret")
        #expect(identity.notBefore == TestCertificates.expiredNotBefore)
        #expect(identity.notAfter == TestCertificates.expiredNotAfter)
        #expect(throws: CredentialError.expired(notAfter: TestCertificates.expiredNotAfter)) {
            try identity.validate(now: TestCertificates.expiredNotAfter + 1)
        }
        #expect(CredentialError.expired(notAfter: identity.notAfter).description
            == "certificate expired on 2021-01-01T00:00:00Z")
        try identity.validate(now: TestCertificates.expiredNotAfter)
    }

    @Test("a certificate from the future is not yet valid")
    func futureCertificate() throws {
        let identity = try TLSIdentity.pkcs12(TestCertificates.bytes(TestCertificates.futureClientP12), password: "secret")
        #expect(identity.notBefore == TestCertificates.futureNotBefore)
        #expect(throws: CredentialError.notYetValid(notBefore: TestCertificates.futureNotBefore)) {
            try identity.validate(now: 1_700_000_000)
        }
        #expect(CredentialError.notYetValid(notBefore: identity.notBefore).description
            == "certificate is not valid before 2099-01-01T00:00:00Z")
    }

    @Test("without the legacy provider a legacy p12 fails with a message that says so")
    func legacyWithoutProvider() throws {
        let legacy = try TestCertificates.bytes(TestCertificates.clientP12Legacy)
        let modern = try TestCertificates.bytes(TestCertificates.clientP12)
        // A library context with only the default provider, as on a system
        // without ossl-modules/legacy.so.
        let outcome = OpenSSLTestHooks.withIsolatedLibraryContext(providers: ["default"]) {
            () -> (legacy: Result<TLSIdentity, CredentialError>, modern: Result<TLSIdentity, CredentialError>) in
            (Result { () throws(CredentialError) in try TLSIdentity.pkcs12(legacy, password: "secret", legacyAvailable: false) },
             Result { () throws(CredentialError) in try TLSIdentity.pkcs12(modern, password: "secret", legacyAvailable: false) })
        }
        let results = try #require(outcome)
        #expect(throws: CredentialError.legacyProviderUnavailable) { try results.legacy.get() }
        #expect(try results.modern.get().subjectUID == TestCertificates.bundleID)
        #expect(CredentialError.legacyProviderUnavailable.description.contains("legacy provider"))
    }

    @Test("a PEM certificate and key load as an identity")
    func pemPair() throws {
        let identity = try TLSIdentity.pem(
            certificate: TestCertificates.bytes(TestCertificates.clientCertificate),
            privateKey: TestCertificates.bytes(TestCertificates.clientKey))
        #expect(identity.subjectUID == TestCertificates.bundleID)
        #expect(identity.subjectCommonName == Self.clientSubjectCN)
        #expect(identity.chainLength == 0)
    }

    @Test("a PEM certificate file with the chain appended keeps the chain")
    func pemChain() throws {
        let identity = try TLSIdentity.pem(
            certificateFile: TestCertificates.path(TestCertificates.serverChain),
            privateKeyFile: TestCertificates.path(TestCertificates.serverKey))
        #expect(identity.chainLength == 1)
        #expect(identity.subjectCommonName == "localhost")
        #expect(identity.subjectUID == nil)
    }

    @Test("PEM failures are typed", arguments: [
        (TestCertificates.clientCertificate, TestCertificates.serverKey, CredentialError.keyMismatch),
        (TestCertificates.clientKey, TestCertificates.clientKey, CredentialError.noCertificate),
        (TestCertificates.clientCertificate, TestCertificates.clientCertificate, CredentialError.noPrivateKey),
        (TestCertificates.notAP12, TestCertificates.clientKey, CredentialError.noCertificate),
    ])
    func pemFailures(certificate: String, key: String, expected: CredentialError) throws {
        let certificateBytes = try TestCertificates.bytes(certificate)
        let keyBytes = try TestCertificates.bytes(key)
        #expect(throws: expected) { try TLSIdentity.pem(certificate: certificateBytes, privateKey: keyBytes) }
    }

    @Test("empty PEM inputs are a missing certificate or key")
    func emptyPEM() throws {
        let certificate = try TestCertificates.bytes(TestCertificates.clientCertificate)
        let key = try TestCertificates.bytes(TestCertificates.clientKey)
        #expect(throws: CredentialError.noCertificate) { try TLSIdentity.pem(certificate: [], privateKey: key) }
        #expect(throws: CredentialError.noPrivateKey) { try TLSIdentity.pem(certificate: certificate, privateKey: []) }
    }

    @Test("a damaged PEM block is invalid PEM")
    func damagedPEM() throws {
        let good = try TestCertificates.bytes(TestCertificates.clientCertificate)
        let text = String(decoding: good, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[3] = String(repeating: "!", count: lines[3].count)
        let damaged = Array(lines.joined(separator: "\n").utf8)
        let key = try TestCertificates.bytes(TestCertificates.clientKey)
        let error = try #require(throws: CredentialError.self) { try TLSIdentity.pem(certificate: damaged, privateKey: key) }
        guard case .invalidPEM(let what, _) = error else { Issue.record("got \(error)"); return }
        #expect(what == "certificate")
    }

    @Test("an encrypted PEM key fails without prompting for a password")
    func encryptedPEMKey() throws {
        let encrypted = try Subprocess.run([
            "openssl", "pkey", "-in", try TestCertificates.path(TestCertificates.clientKey), "-aes256", "-passout", "pass:x",
        ])
        try #require(encrypted.status == 0)
        let certificate = try TestCertificates.bytes(TestCertificates.clientCertificate)
        let error = try #require(throws: CredentialError.self) {
            try TLSIdentity.pem(certificate: certificate, privateKey: encrypted.standardOutput)
        }
        guard case .invalidPEM(let what, _) = error else { Issue.record("got \(error)"); return }
        #expect(what == "private key")
    }

    @Test("an unreadable file names the path and the errno text")
    func unreadableFile() {
        let path = "/nonexistent/toot-relay.p12"
        #expect(throws: CredentialError.unreadableFile(path: path, reason: "No such file or directory")) {
            try TLSIdentity.pkcs12(file: path, password: "")
        }
        #expect(CredentialError.unreadableFile(path: path, reason: "No such file or directory").description
            == "cannot read /nonexistent/toot-relay.p12: No such file or directory")
    }

    @Test("a directory is unreadable as a credential file")
    func directoryIsUnreadable() throws {
        let directory = try TestCertificates.directory()
        #expect(throws: CredentialError.unreadableFile(path: directory, reason: "Is a directory")) {
            try CredentialFile.read(directory)
        }
    }

    @Test("every error description is one line", arguments: [
        CredentialError.unreadableFile(path: "/x", reason: "Permission denied"), .notPKCS12("x"), .wrongPassword,
        .corruptPKCS12("x"), .legacyProviderUnavailable, .unsupportedAlgorithm("x"), .noPrivateKey, .noCertificate,
        .keyMismatch, .expired(notAfter: 0), .notYetValid(notBefore: 0), .invalidPEM(what: "x", reason: "y"),
        .unsupportedKey("x"), .signingFailed("x"),
    ])
    func oneLineDescriptions(error: CredentialError) {
        #expect(!error.description.isEmpty)
        #expect(!error.description.contains("\n"))
    }

    @Test("unix seconds format as ISO 8601 UTC", arguments: [
        (0, "1970-01-01T00:00:00Z"),
        (1_609_459_200, "2021-01-01T00:00:00Z"),
        (1_700_000_000, "2023-11-14T22:13:20Z"),
    ])
    func iso8601(seconds: Int, text: String) {
        #expect(certificateDateText(seconds) == text)
    }
}
