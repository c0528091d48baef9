import Testing
import TestSupport
@testable import TLS

@Suite("OpenSSL bridge")
struct OpenSSLTests {
    @Test("ALPN lists are encoded as length-prefixed names (RFC 7301 §3.1)", arguments: [
        ([], []),
        (["h2"], [2, 0x68, 0x32]),
        (["h2", "http/1.1"], [2, 0x68, 0x32, 8] + Array("http/1.1".utf8)),
    ] as [([String], [UInt8])])
    func alpnWireFormat(protocols: [String], wire: [UInt8]) throws {
        #expect(try ALPNProtocolList.wireFormat(protocols) == wire)
    }

    @Test("a 255-byte ALPN name is the longest allowed")
    func longestALPN() throws {
        let wire = try ALPNProtocolList.wireFormat([String(repeating: "a", count: 255)])
        #expect(wire.count == 256)
        #expect(wire.first == 255)
    }

    @Test("the error line keeps distinct entries, at most three, and falls back when empty")
    func errorLine() {
        let entry = { (text: String) in OpenSSLErrorQueue.Entry(library: 0, reason: 0, text: text) }
        #expect(OpenSSLErrorQueue.line([], fallback: "nothing") == "nothing")
        #expect(OpenSSLErrorQueue.line([entry("a"), entry("a"), entry("b")], fallback: "") == "a; b")
        #expect(OpenSSLErrorQueue.line([entry("a"), entry("b"), entry("c"), entry("d")], fallback: "") == "a; b; c")
    }

    @Test("a failed parse leaves this thread's error queue empty")
    func errorQueueIsEmptied() throws {
        let bytes = try TestCertificates.bytes(TestCertificates.notAP12)
        #expect(throws: CredentialError.self) { try TLSIdentity.pkcs12(bytes, password: "") }
        #expect(OpenSSLErrorQueue.takeAll().isEmpty)
        #expect(throws: CredentialError.self) { try ES256Signer(pkcs8PEM: bytes) }
        #expect(OpenSSLErrorQueue.takeAll().isEmpty)
        let offCurve: [UInt8] = [0x04] + [UInt8](repeating: 0, count: 64)
        #expect(throws: CredentialError.self) { try ES256Verifier(uncompressedPublicKey: offCurve) }
        #expect(OpenSSLErrorQueue.takeAll().isEmpty)
    }

    @Test("the legacy provider is available on this system (Debian's libssl3 ships it)")
    func legacyProviderLoaded() {
        #expect(OpenSSLProviders.shared.legacyLoaded)
    }
}
