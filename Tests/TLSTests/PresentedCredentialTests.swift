import Foundation
import Testing
import TestSupport
import TLS

@Suite("The relay's own keys and certificates, as a client presents them")
struct PresentedCredentialTests {
    @Test("a signer verifies its own signatures, not another key's")
    func signerVerifies() throws {
        let signer = try ES256Signer(pkcs8PEM: TestCertificates.bytes(TestCertificates.authKeyP8))
        let signature = try signer.sign(ES256Tests.message)
        #expect(signer.verify(ES256Tests.message, signature: signature))
        #expect(!signer.verify(ES256Tests.message + [0x2e], signature: signature))
        #expect(!signer.verify(ES256Tests.message, signature: Array(signature.dropLast())))
    }

    @Test("a certificate's SHA-256 fingerprint is openssl's, whichever form it was loaded from")
    func fingerprint() throws {
        let pem = try TLSIdentity.pem(certificateFile: TestCertificates.path(TestCertificates.clientCertificate),
                                      privateKeyFile: TestCertificates.path(TestCertificates.clientKey))
        let p12 = try TLSIdentity.pkcs12(file: TestCertificates.path(TestCertificates.clientP12),
                                          password: TestCertificates.p12Password)
        let der = try openssl(["x509", "-in", TestCertificates.path(TestCertificates.clientCertificate),
                               "-outform", "DER"])
        #expect(pem.sha256Fingerprint == SHA256.hash(der))
        #expect(p12.sha256Fingerprint == pem.sha256Fingerprint)
        #expect(pem.sha256Fingerprint.count == 32)
    }

    private func openssl(_ arguments: [String]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(data)
    }
}
