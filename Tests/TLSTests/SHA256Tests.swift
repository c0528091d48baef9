import Testing
import TLS

@Suite("SHA-256")
struct SHA256Tests {
    /// FIPS 180-4's examples (NIST CSRC "SHA256.pdf" and the SHA-2 test
    /// vectors): the empty message, one block, two blocks, the 896-bit
    /// message, and a million "a" (many blocks through one call).
    @Test("the NIST examples hash to their published digests", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
        (String(repeating: "a", count: 1_000_000),
         "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
    ])
    func nistVectors(message: String, digest: String) {
        #expect(ES256Tests.hex(SHA256.hash(Array(message.utf8))[...]) == digest)
    }

    /// What a restricted endpoint's `vapid=` carries: the hash of
    /// a VAPID key py_vapid 1.9.6 made (ES256PointTests.pyVapid), checked
    /// against Python's hashlib.
    @Test("the hash of a VAPID key is the one Python computes")
    func vapidKeyHash() throws {
        let key = try #require(ES256Tests.bytes(fromHex: ES256PointTests.pyVapid.point))
        #expect(ES256Tests.hex(SHA256.hash(key)[...]) == "1a295b154f344f1a02612671718077c28ead294407ebf1a4875dbefd8228fc39")
    }

    @Test("every digest is 32 bytes and one changed bit changes it")
    func lengthAndAvalanche() {
        let message = Array("Mastodon".utf8)
        var flipped = message
        flipped[0] ^= 1
        #expect(SHA256.hash(message).count == 32)
        #expect(SHA256.hash(message) != SHA256.hash(flipped))
        #expect(SHA256.hash(message) == SHA256.hash(message))
    }
}
