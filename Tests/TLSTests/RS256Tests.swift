// RS256 with throwaway RSA keys (scripts/make-test-certs, openssl
// genpkey): what the relay signs verifies with the openssl CLI and with
// RS256Verifier, and the other way round; other keys are refused.

import Testing
import TestSupport
import TLS

@Suite("RS256")
struct RS256Tests {
    /// A JWT signing input of the shape FCM's token request signs.
    static let message = Array(("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6IjAxMjMifQ."
        + "eyJpc3MiOiJhQGIuaWFtLmdzZXJ2aWNlYWNjb3VudC5jb20iLCJpYXQiOjE3MDAwMDAwMDB9").utf8)

    func pair() throws -> (RS256Signer, RS256Verifier) {
        (try RS256Signer(privateKeyPEM: TestCertificates.bytes(TestCertificates.serviceAccountKeyP8)),
         try RS256Verifier(publicKeyPEM: TestCertificates.bytes(TestCertificates.serviceAccountPublicKey)))
    }

    @Test("a signature is as long as the modulus and verifies")
    func signAndVerify() throws {
        let (signer, verifier) = try pair()
        let signature = try signer.sign(Self.message)
        #expect(signer.signatureLength == 256)
        #expect(signature.count == 256)
        #expect(verifier.verify(Self.message, signature: signature))
        // PKCS#1 v1.5 is deterministic: the same message, the same signature.
        #expect(try signer.sign(Self.message) == signature)
        #expect(verifier.verify([], signature: try signer.sign([])))
    }

    @Test("the key as PKCS#1 (BEGIN RSA PRIVATE KEY) signs as the same key as PKCS#8")
    func pkcs1() throws {
        let (signer, verifier) = try pair()
        let pkcs1 = try RS256Signer(privateKeyPEM: TestCertificates.bytes(TestCertificates.serviceAccountKeyPKCS1))
        #expect(try pkcs1.sign(Self.message) == signer.sign(Self.message))
        #expect(verifier.verify(Self.message, signature: try pkcs1.sign(Self.message)))
    }

    @Test("a verifier made from the private key (as a service account's file holds it) checks the same signatures")
    func verifierFromPrivateKey() throws {
        let (signer, _) = try pair()
        for file in [TestCertificates.serviceAccountKeyP8, TestCertificates.serviceAccountKeyPKCS1] {
            let verifier = try RS256Verifier(privateKeyPEM: TestCertificates.bytes(file))
            #expect(verifier.verify(Self.message, signature: try signer.sign(Self.message)))
            #expect(!verifier.verify(Self.message + [0], signature: try signer.sign(Self.message)))
        }
        #expect(throws: CredentialError.self) {
            try RS256Verifier(privateKeyPEM: TestCertificates.bytes(TestCertificates.rsa1024KeyP8))
        }
    }

    @Test("a tampered message or signature does not verify")
    func tampered() throws {
        let (signer, verifier) = try pair()
        expectTamperingRefused(message: Self.message, signature: try signer.sign(Self.message), flipping: [0, 1, 127, 255],
                               bit: 0x01, verify: { verifier.verify($0, signature: $1) })
    }

    @Test("signatures of the wrong length do not verify", arguments: [0, 1, 255, 257, 512])
    func wrongLength(length: Int) throws {
        let (signer, verifier) = try pair()
        let signature = try signer.sign(Self.message)
        let padded = length > 256 ? [UInt8](repeating: 0, count: length - 256) + signature : Array(signature.suffix(length))
        #expect(!verifier.verify(Self.message, signature: padded))
    }

    @Test("keys other than RSA of 2048 bits or more are refused", arguments: [
        (TestCertificates.authKeyP8, "RS256 needs an RSA key, this is EC"),
        (TestCertificates.p384KeyP8, "RS256 needs an RSA key, this is EC"),
        (TestCertificates.rsa1024KeyP8, "RS256 needs an RSA key of at least 2048 bits (RFC 7518 §3.3), this one has 1024"),
    ])
    func refusesOtherKeys(file: String, reason: String) throws {
        let bytes = try TestCertificates.bytes(file)
        #expect(throws: CredentialError.unsupportedKey(reason)) { try RS256Signer(privateKeyPEM: bytes) }
    }

    @Test("input that is not a private key is refused with a typed error", arguments: [
        TestCertificates.notAP12, TestCertificates.clientCertificate, TestCertificates.serviceAccountPublicKey,
    ])
    func refusesNonKeys(file: String) throws {
        let bytes = try TestCertificates.bytes(file)
        #expect(throws: CredentialError.self) { try RS256Signer(privateKeyPEM: bytes) }
    }

    @Test("a damaged key is refused, and the error shows none of it")
    func damagedKey() throws {
        let pem = try TestCertificates.bytes(TestCertificates.serviceAccountKeyP8)
        let text = String(decoding: pem, as: UTF8.self)
        let lines = text.split(separator: "\n")
        // The second half of the body gone: still a PEM block, no longer a key.
        let damaged = Array((lines.prefix(lines.count / 2).joined(separator: "\n") + "\n" + lines.last! + "\n").utf8)
        do {
            _ = try RS256Signer(privateKeyPEM: damaged)
            Issue.record("a damaged key was read")
        } catch {
            for line in lines.dropFirst().dropLast() where line.count >= 16 {
                #expect(!error.description.contains(line.prefix(16)))
            }
        }
        #expect(throws: CredentialError.noPrivateKey) { try RS256Signer(privateKeyPEM: []) }
    }

    @Test("a verifier refuses a private key, an EC key, a small key or garbage as its public key", arguments: [
        TestCertificates.notAP12, TestCertificates.serviceAccountKeyP8, TestCertificates.authKeyPublic,
    ])
    func verifierRefusesOtherKeys(file: String) throws {
        let bytes = try TestCertificates.bytes(file)
        #expect(throws: CredentialError.self) { try RS256Verifier(publicKeyPEM: bytes) }
    }

    @Test("a verifier refuses an RSA public key under 2048 bits")
    func verifierRefusesSmallKey() throws {
        let publicKey = try Subprocess.run(["openssl", "pkey", "-pubout", "-in", TestCertificates.path(TestCertificates.rsa1024KeyP8)])
        try #require(publicKey.status == 0)
        #expect(throws: CredentialError.unsupportedKey(
            "RS256 needs an RSA key of at least 2048 bits (RFC 7518 §3.3), this one has 1024")) {
            try RS256Verifier(publicKeyPEM: publicKey.standardOutput)
        }
    }

    @Test("the openssl CLI verifies our signature")
    func opensslVerifiesOurSignature() throws {
        let (signer, _) = try pair()
        let signature = try signer.sign(Self.message)
        let scratch = try TestCertificates.directory() + "/rs256-cli-\(UInt64.random(in: 0...UInt64.max))"
        let message = try Subprocess.run(["/bin/sh", "-c", "mkdir -p \(scratch) && cat > \(scratch)/message"], standardInput: Self.message)
        try #require(message.status == 0)
        let write = try Subprocess.run(["/bin/sh", "-c", "cat > \(scratch)/signature"], standardInput: signature)
        try #require(write.status == 0)
        let verify = try Subprocess.run([
            "openssl", "dgst", "-sha256", "-verify", try TestCertificates.path(TestCertificates.serviceAccountPublicKey),
            "-signature", "\(scratch)/signature", "\(scratch)/message",
        ])
        #expect(verify.standardOutputText.contains("Verified OK"), "\(verify.standardOutputText) \(verify.standardErrorText)")
        #expect(verify.status == 0)
    }

    @Test("our verifier accepts a signature made by the openssl CLI, and it is ours byte for byte")
    func weVerifyOpensslSignature() throws {
        let (signer, verifier) = try pair()
        let sign = try Subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", try TestCertificates.path(TestCertificates.serviceAccountKeyP8)],
            standardInput: Self.message)
        try #require(sign.status == 0, "\(sign.standardErrorText)")
        #expect(verifier.verify(Self.message, signature: sign.standardOutput))
        #expect(try signer.sign(Self.message) == sign.standardOutput)
    }
}
