// The registration token's syntax: what a Web Push URL may carry to FCM.

import FCMCore
import Testing

@Suite("An FCM registration token")
struct FCMTokenTests {
    @Test("tokens of letters, digits, '-', '_' and ':' up to 4096 are taken", arguments: [
        "cXyZ0123-_:APA91bH1x2y3z4",
        "f" + String(repeating: "A", count: 151) + ":APA91b" + String(repeating: "x_-9", count: 36),
        "a", ":", String(repeating: "Z", count: 4096),
    ])
    func valid(text: String) throws {
        let token = try #require(FCMToken(text))
        #expect(token.text == text)
        #expect(FCMToken.isValid(Array(text.utf8)))
    }

    @Test("anything else is refused", arguments: [
        "", String(repeating: "Z", count: 4097), "a/b", "a b", "a%3Ab", "a?b", "a.b", "a+b", "a=b", "tök", "a\u{0}",
        "a\nb", "\"a\"", "a\\b", "🎺",
    ])
    func invalid(text: String) {
        #expect(FCMToken(text) == nil)
        #expect(!FCMToken.isValid(Array(text.utf8)))
    }

    @Test("a substring is read as its own text")
    func substring() throws {
        let path = "/relay-to/fcm/abc:DEF/extra"
        let token = try #require(FCMToken(path.split(separator: "/")[2]))
        #expect(token.text == "abc:DEF")
    }
}
