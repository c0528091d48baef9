import Foundation
import Testing
import TestSupport
import TLS

/// ES256Verifier(uncompressedPublicKey:): the raw P-256 point VAPID's `k`
/// carries (RFC 8292 §3.2), 0x04‖x‖y.
@Suite("ES256 with a raw public point")
struct ES256PointTests {
    struct Vector: Sendable {
        let point: String       // hex, 65 bytes
        let message: String     // the JWS signing input
        let signature: String   // hex, r‖s
    }

    /// RFC 7515 Appendix A.3 (the ES256 JWS example): its JWK's x and y
    /// as a point, its signing input and signature.
    static let rfc7515 = Vector(
        point: "047fcdce2770f6c45d4183cbee6fdb4b7b580733357be9ef13bacf6e3c7bd15445"
            + "c7f144cd1bbd9b7e872cdfedb9eeb9f4b3695d6ea90b24ad8a4623288588e5ad",
        message: "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ",
        signature: "0ed1215379636c483c2f7f155807d402a3b228033af97c7e17819ac3169ea665"
            + "c50a07d38c3c70e5d8f12daf084a5480a66590c5f293509a8f3f7f8a83a354d5")

    /// A VAPID JWT as pywebpush sends it, made offline by py_vapid 1.9.6
    /// (`Vapid02().sign({"aud": "https://relay.example.com:8443", "exp":
    /// 1800000000, "sub": "mailto:admin@mastodon.example"})`): `k` decoded
    /// from base64url, the signature from the JWT's third part.
    static let pyVapid = Vector(
        point: "04c285d14dcaff36b757facb603a3e72713b4fdf94ac0b5fd80726dcd928cb2aa0"
            + "5423f7fadb5ad44cd5743675177995e7320db71eb4dcb5f24422a751f8274363",
        message: "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3JlbGF5LmV4YW1wbGUuY29tOjg0NDMiLCJleHAiOjE4MDAwMDAwMDAsInN1YiI6Im1haWx0bzphZG1pbkBtYXN0b2Rvbi5leGFtcGxlIn0",
        signature: "f847e3dfe4978add5bdf382a10f0464767091c57fb8f4802181f84e5712e69b7"
            + "9888fba6178df861d259b92cf900490ea9fb71c03df164b820b76d895175bd55")

    static func bytes(_ hex: String) throws -> [UInt8] {
        try #require(ES256Tests.bytes(fromHex: hex))
    }

    /// The raw point of the test key `authkey-public.pem`: a P-256
    /// SubjectPublicKeyInfo is a fixed 26-byte DER prefix (RFC 5480 §2,
    /// id-ecPublicKey with prime256v1) and then the 65-byte point.
    static func authKeyPoint() throws -> [UInt8] {
        let pem = String(decoding: try TestCertificates.bytes(TestCertificates.authKeyPublic), as: UTF8.self)
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = [UInt8](try #require(Data(base64Encoded: body)))
        let prefix = try bytes("3059301306072a8648ce3d020106082a8648ce3d030107034200")
        try #require(der.count == prefix.count + 65 && Array(der.prefix(prefix.count)) == prefix)
        return Array(der.suffix(65))
    }

    @Test("published signatures verify with their raw point", arguments: [rfc7515, pyVapid])
    func knownVectors(vector: Vector) throws {
        let verifier = try ES256Verifier(uncompressedPublicKey: try Self.bytes(vector.point))
        let signature = try Self.bytes(vector.signature)
        #expect(verifier.verify(Array(vector.message.utf8), signature: signature))
        var tampered = Array(vector.message.utf8)
        tampered[tampered.count - 1] ^= 1
        #expect(!verifier.verify(tampered, signature: signature))
    }

    @Test("a signature by the test key verifies through the raw point of its public key, as through its PEM")
    func signerAndRawPoint() throws {
        let signer = try ES256Signer(pkcs8PEM: TestCertificates.bytes(TestCertificates.authKeyP8))
        let raw = try ES256Verifier(uncompressedPublicKey: Self.authKeyPoint())
        let pem = try ES256Verifier(publicKeyPEM: TestCertificates.bytes(TestCertificates.authKeyPublic))
        let signature = try signer.sign(ES256Tests.message)
        #expect(raw.verify(ES256Tests.message, signature: signature))
        #expect(pem.verify(ES256Tests.message, signature: signature))
        var bad = signature
        bad[40] ^= 1
        #expect(!raw.verify(ES256Tests.message, signature: bad))
    }

    @Test("another valid point does not verify the signature: another key, or the key's own negation (x, p − y)")
    func wrongPoint() throws {
        let signer = try ES256Signer(pkcs8PEM: TestCertificates.bytes(TestCertificates.authKeyP8))
        let signature = try signer.sign(ES256Tests.message)
        let other = try ES256Verifier(uncompressedPublicKey: Self.bytes(Self.rfc7515.point))
        #expect(!other.verify(ES256Tests.message, signature: signature))
        let negated = try ES256Verifier(uncompressedPublicKey: Self.negated(Self.authKeyPoint()))
        #expect(!negated.verify(ES256Tests.message, signature: signature))
        // And the vectors do not cross.
        let pyVapid = try ES256Verifier(uncompressedPublicKey: Self.bytes(Self.pyVapid.point))
        #expect(!pyVapid.verify(Array(Self.rfc7515.message.utf8), signature: try Self.bytes(Self.rfc7515.signature)))
    }

    /// P-256's field prime p (FIPS 186-4 D.1.2.3).
    static let prime = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"

    /// (x, p − y): the point's negation, on the curve too.
    static func negated(_ point: [UInt8]) throws -> [UInt8] {
        let p = try bytes(prime)
        var y = Array(point[33..<65])
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            let difference = Int(p[index]) - Int(y[index]) - borrow
            y[index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        return Array(point[0..<33]) + y
    }

    struct BadPoint: Sendable, CustomTestStringConvertible {
        let name: String
        let make: @Sendable ([UInt8]) throws -> [UInt8]  // from the valid authkey point
        let reason: String
        var testDescription: String { name }
    }

    static let badPoints: [BadPoint] = [
        BadPoint(name: "empty", make: { _ in [] }, reason: "65 bytes, this is 0"),
        BadPoint(name: "the point at infinity (SEC 1: one zero byte)", make: { _ in [0] }, reason: "this is 1"),
        BadPoint(name: "compressed (33 bytes)", make: { [0x02 | ($0[64] & 1)] + $0[1..<33] }, reason: "this is 33"),
        BadPoint(name: "one byte short", make: { Array($0.dropLast()) }, reason: "this is 64"),
        BadPoint(name: "one byte long", make: { $0 + [0] }, reason: "this is 66"),
        BadPoint(name: "x‖y without the 0x04", make: { Array($0.dropFirst()) + [0] }, reason: "does not start with 0x04"),
        BadPoint(name: "hybrid form (0x06/0x07, which OpenSSL would decode)", make: { [0x06 | ($0[64] & 1)] + $0[1...] },
                 reason: "does not start with 0x04"),
        BadPoint(name: "compressed prefix on 65 bytes", make: { [0x03] + $0[1...] }, reason: "(compressed)"),
        BadPoint(name: "(0, 0), the usual stand-in for infinity", make: { _ in [0x04] + [UInt8](repeating: 0, count: 64) },
                 reason: "not on P-256"),
        BadPoint(name: "off the curve (y changed by one bit)", make: { var p = $0; p[64] ^= 1; return p },
                 reason: "not on P-256"),
        BadPoint(name: "x equal to the field prime", make: { [0x04] + (try ES256PointTests.bytes(ES256PointTests.prime)) + $0[33...] },
                 reason: "not on P-256"),
        BadPoint(name: "all ones", make: { _ in [0x04] + [UInt8](repeating: 0xFF, count: 64) }, reason: "not on P-256"),
        BadPoint(name: "a P-384 point (97 bytes)", make: { _ in [0x04] + [UInt8](repeating: 0x11, count: 96) },
                 reason: "this is 97"),
    ]

    @Test("anything but a point on P-256 is refused with a typed one-line error", arguments: badPoints)
    func refusesBadPoints(bad: BadPoint) throws {
        let point = try bad.make(Self.authKeyPoint())
        let error = try #require(throws: CredentialError.self) { try ES256Verifier(uncompressedPublicKey: point) }
        guard case .invalidPublicKey(let reason) = error else { Issue.record("got \(error)"); return }
        #expect(reason.contains(bad.reason), "\(reason)")
        #expect(!error.description.contains("\n"))
    }

    @Test("keys read from points on several threads at once all verify (they share P-256's parameters)")
    func concurrentImports() async throws {
        let vector = Self.pyVapid
        let point = try Self.bytes(vector.point)
        let signature = try Self.bytes(vector.signature)
        let verified = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var count = 0
                    for _ in 0..<25 {
                        if let verifier = try? ES256Verifier(uncompressedPublicKey: point),
                           verifier.verify(Array(vector.message.utf8), signature: signature) {
                            count += 1
                        }
                    }
                    return count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(verified == 8 * 25)
    }

    @Test("P-256's generator is a valid public point")
    func generator() throws {
        // FIPS 186-4 D.1.2.3: G = (Gx, Gy).
        let g = try Self.bytes("04"
            + "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
            + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
        let verifier = try ES256Verifier(uncompressedPublicKey: g)
        #expect(!verifier.verify(ES256Tests.message, signature: try Self.bytes(Self.rfc7515.signature)))
    }
}
