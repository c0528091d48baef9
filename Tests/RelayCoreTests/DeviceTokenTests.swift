import RelayCore
import Testing

@Suite("Device tokens outside a URL")
struct DeviceTokenTests {
    static let examples: [(text: String, token: String?)] = [
        (String(repeating: "ab", count: 32), String(repeating: "ab", count: 32)),
        (String(repeating: "AB", count: 32), String(repeating: "ab", count: 32)),
        (String(repeating: "0f", count: 100), String(repeating: "0f", count: 100)),
        (String(repeating: "0f", count: 101), nil),
        (String(repeating: "a", count: 65), nil),
        (String(repeating: "ab", count: 31), nil),
        ("zz" + String(repeating: "ab", count: 31), nil),
        (String(repeating: "ab", count: 16) + " " + String(repeating: "ab", count: 16), nil),
        ("", nil),
    ]

    @Test("hex of 64 to 200 digits, even, any case, is a token, lowercased; anything else is not", arguments: examples)
    func tokenRule(_ example: (text: String, token: String?)) {
        #expect(deviceToken(fromHex: example.text) == example.token)
    }
}
