import Testing
import TestSupport
import TLS

@Suite("ES256")
struct ES256Tests {
    static let message = Array("eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyMzQ1NjcifQ.eyJpc3MiOiJERUY1Njc4OTAxIiwiaWF0IjoxNzAwMDAwMDAwfQ".utf8)

    func pair() throws -> (ES256Signer, ES256Verifier) {
        (try ES256Signer(pkcs8PEM: TestCertificates.bytes(TestCertificates.authKeyP8)),
         try ES256Verifier(publicKeyPEM: TestCertificates.bytes(TestCertificates.authKeyPublic)))
    }

    @Test("a signature is 64 bytes and verifies")
    func signAndVerify() throws {
        let (signer, verifier) = try pair()
        let signature = try signer.sign(Self.message)
        #expect(signature.count == 64)
        #expect(verifier.verify(Self.message, signature: signature))
        // ECDSA is randomised: two signatures differ, both verify.
        let second = try signer.sign(Self.message)
        #expect(second != signature)
        #expect(verifier.verify(Self.message, signature: second))
    }

    @Test("signing an empty message works")
    func emptyMessage() throws {
        let (signer, verifier) = try pair()
        #expect(verifier.verify([], signature: try signer.sign([])))
    }

    @Test("a signer loaded from a file signs like one loaded from bytes")
    func signerFromFile() throws {
        let signer = try ES256Signer(pkcs8File: TestCertificates.path(TestCertificates.authKeyP8))
        let (_, verifier) = try pair()
        #expect(verifier.verify(Self.message, signature: try signer.sign(Self.message)))
    }

    @Test("a tampered message or signature does not verify")
    func tampered() throws {
        let (signer, verifier) = try pair()
        expectTamperingRefused(message: Self.message, signature: try signer.sign(Self.message), flipping: [0, 31, 32, 63],
                               bit: 0x80, verify: { verifier.verify($0, signature: $1) })
    }

    @Test("signatures of the wrong length do not verify", arguments: [0, 63, 65, 72])
    func wrongLength(length: Int) throws {
        let (signer, verifier) = try pair()
        let signature = try signer.sign(Self.message)
        #expect(!verifier.verify(Self.message, signature: Array((signature + signature).prefix(length))))
    }

    @Test("a P-384 key is refused")
    func refusesP384() throws {
        let bytes = try TestCertificates.bytes(TestCertificates.p384KeyP8)
        let error = try #require(throws: CredentialError.self) { try ES256Signer(pkcs8PEM: bytes) }
        guard case .unsupportedKey(let reason) = error else { Issue.record("got \(error)"); return }
        #expect(reason.contains("secp384r1"))
    }

    @Test("an RSA key is refused")
    func refusesRSA() throws {
        let bytes = try TestCertificates.bytes(TestCertificates.clientKey)
        let error = try #require(throws: CredentialError.self) { try ES256Signer(pkcs8PEM: bytes) }
        guard case .unsupportedKey(let reason) = error else { Issue.record("got \(error)"); return }
        #expect(reason.contains("RSA"))
    }

    @Test("input that is not a private key is refused with a typed error", arguments: [
        TestCertificates.notAP12, TestCertificates.clientCertificate, TestCertificates.authKeyPublic,
    ])
    func refusesNonKeys(file: String) throws {
        let bytes = try TestCertificates.bytes(file)
        #expect(throws: CredentialError.self) { try ES256Signer(pkcs8PEM: bytes) }
    }

    @Test("a verifier refuses a private key or garbage as its public key", arguments: [
        TestCertificates.notAP12, TestCertificates.authKeyP8,
    ])
    func verifierRefusesNonPublicKeys(file: String) throws {
        let bytes = try TestCertificates.bytes(file)
        #expect(throws: CredentialError.self) { try ES256Verifier(publicKeyPEM: bytes) }
    }

    @Test("the openssl CLI verifies our signature (r‖s turned into DER by openssl asn1parse)")
    func opensslVerifiesOurSignature() throws {
        let (signer, _) = try pair()
        let signature = try signer.sign(Self.message)
        let scratch = try TestCertificates.directory() + "/es256-cli-\(UInt64.random(in: 0...UInt64.max))"
        let config = "asn1=SEQUENCE:signature\n[signature]\n"
            + "r=INTEGER:0x\(Self.hex(signature[0..<32]))\ns=INTEGER:0x\(Self.hex(signature[32..<64]))\n"
        let message = try Subprocess.run(["/bin/sh", "-c", "mkdir -p \(scratch) && cat > \(scratch)/message"], standardInput: Self.message)
        try #require(message.status == 0)
        let write = try Subprocess.run(["/bin/sh", "-c", "cat > \(scratch)/asn1.cnf"], standardInput: Array(config.utf8))
        try #require(write.status == 0)
        let der = try Subprocess.run(["openssl", "asn1parse", "-genconf", "\(scratch)/asn1.cnf", "-out", "\(scratch)/signature.der", "-noout"])
        try #require(der.status == 0, "\(der.standardErrorText)")
        let verify = try Subprocess.run([
            "openssl", "dgst", "-sha256", "-verify", try TestCertificates.path(TestCertificates.authKeyPublic),
            "-signature", "\(scratch)/signature.der", "\(scratch)/message",
        ])
        #expect(verify.standardOutputText.contains("Verified OK"), "\(verify.standardOutputText) \(verify.standardErrorText)")
        #expect(verify.status == 0)
    }

    @Test("our verifier accepts a signature made by the openssl CLI")
    func weVerifyOpensslSignature() throws {
        let (_, verifier) = try pair()
        let sign = try Subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", try TestCertificates.path(TestCertificates.authKeyP8)],
            standardInput: Self.message)
        try #require(sign.status == 0, "\(sign.standardErrorText)")
        // DER SEQUENCE { INTEGER r, INTEGER s }: openssl asn1parse prints the integers in hex.
        let parse = try Subprocess.run(["openssl", "asn1parse", "-inform", "DER"], standardInput: sign.standardOutput)
        try #require(parse.status == 0)
        let integers = parse.standardOutputText.split(separator: "\n").compactMap { line -> [UInt8]? in
            guard line.contains("INTEGER"), let colon = line.lastIndex(of: ":") else { return nil }
            return Self.bytes(fromHex: String(line[line.index(after: colon)...]))
        }
        try #require(integers.count == 2)
        let raw = integers.flatMap { Array(repeating: UInt8(0), count: max(0, 32 - $0.count)) + $0.suffix(32) }
        #expect(raw.count == 64)
        #expect(verifier.verify(Self.message, signature: raw))
        var tampered = Self.message
        tampered[tampered.count - 1] ^= 1
        #expect(!verifier.verify(tampered, signature: raw))
    }

    static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func bytes(fromHex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        if digits.count % 2 == 1 { return bytes(fromHex: "0" + text) }
        var out: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
            index += 2
        }
        return out
    }
}
