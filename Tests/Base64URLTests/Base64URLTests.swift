@testable import Base64URL
import TestSupport
import Testing

struct Base64URLTests {
    /// RFC 4648 §10 vectors, unpadded base64url.
    static let vectors: [(plain: String, encoded: String)] = [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"),
        ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ]

    @Test("encodes the RFC 4648 vectors without padding", arguments: vectors)
    func encodes(plain: String, encoded: String) {
        #expect(base64URLEncode(Array(plain.utf8)) == encoded)
    }

    @Test("decodes the RFC 4648 vectors with and without padding", arguments: vectors)
    func decodes(plain: String, encoded: String) throws {
        #expect(try base64URLDecode(encoded) == Array(plain.utf8))
        let padded = encoded + String(repeating: "=", count: (4 - encoded.utf8.count % 4) % 4)
        #expect(try base64URLDecode(padded) == Array(plain.utf8))
    }

    @Test("uses - and _ when encoding, accepts them and + / when decoding")
    func alphabets() throws {
        #expect(base64URLEncode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(try base64URLDecode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(try base64URLDecode("+/+/") == [0xFB, 0xFF, 0xBF])
        #expect(try base64URLDecode("+_-/") == [0xFB, 0xFF, 0xBF])
    }

    @Test("ignores unused low bits in the last digit, as Go's decoder does")
    func trailingBits() throws {
        #expect(try base64URLDecode("Zh") == Array("f".utf8))
    }

    @Test("round-trips random bytes of every length from 0 to 300")
    func roundTrip() throws {
        var generator = SeededGenerator(seed: 64)
        for length in 0...300 {
            let bytes = generator.bytes(length)
            let text = base64URLEncode(bytes)
            #expect(!text.contains("="))
            #expect(try base64URLDecode(text) == bytes)
        }
    }

    static let rejections: [(text: String, error: Base64URLError)] = [
        ("Z", .invalidLength),
        ("Zm9vY", .invalidLength),
        ("Zm9v Yg", .invalidCharacter(offset: 4)),
        ("Zm9v\nYg", .invalidCharacter(offset: 4)),
        ("Zm.v", .invalidCharacter(offset: 2)),
        ("Zg=", .invalidPadding),
        ("Zg===", .invalidPadding),
        ("Zm=vYg", .invalidPadding),
        ("Zm8==", .invalidPadding),
        ("====", .invalidPadding),
        ("Z===", .invalidPadding),
        ("Zm9v=", .invalidPadding),
        ("Zm9vYmFy====", .invalidPadding),
    ]

    @Test("rejects bad text with a typed error", arguments: rejections)
    func rejects(text: String, error: Base64URLError) {
        #expect(throws: error) { try base64URLDecode(text) }
    }

    @Test("recognises the Topic alphabet")
    func topicAlphabet() {
        #expect(isBase64URLAlphabet("AZaz09-_".utf8))
        #expect(!isBase64URLAlphabet("a+b".utf8))
        #expect(!isBase64URLAlphabet("a/b".utf8))
        #expect(!isBase64URLAlphabet("a=".utf8))
        #expect(!isBase64URLAlphabet("a b".utf8))
    }

    @Test("digit values: both alphabets, every other byte refused")
    func digitValues() {
        let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for byte in UInt8.min...UInt8.max {
            let expected = (standard.firstIndex(of: byte) ?? url.firstIndex(of: byte)).map(UInt8.init) ?? 0xFF
            #expect(base64DigitValue(byte) == expected, "byte \(byte)")
        }
    }
}
