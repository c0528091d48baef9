import APNsCore
import Feedback
import Fleet
import Testing

@Suite("Feedback values in Redis: written as one line, read back defensively")
struct FeedbackValueTests {
    static let token = String(repeating: "ab", count: 32)

    @Test("an entry written is the same entry read back, either environment",
          arguments: [FeedbackEntry(app: "toot", environment: .production, token: token, reason: "Unregistered",
                                    time: 1_764_114_000_123),
                      FeedbackEntry(app: "toot", environment: .development, token: String(repeating: "f", count: 200),
                                    reason: "BadDeviceToken", time: 0),
                      FeedbackEntry(app: "toot", environment: .production, platform: .android,
                                    token: "cXyz_-1:APA91b" + String(repeating: "Q", count: 150), reason: "UNREGISTERED",
                                    time: 1_764_114_000_123),
                      FeedbackEntry(app: "toot", environment: .production, platform: .android,
                                    token: String(repeating: "x", count: 4096), reason: "SENDER_ID_MISMATCH", time: 1)])
    func roundTrip(entry: FeedbackEntry) throws {
        let value = feedbackValue(entry)
        #expect(try decodeFeedbackValue(value, app: "toot").get() == entry)
    }

    @Test("the value is text an operator can read")
    func valueText() {
        let entry = FeedbackEntry(app: "toot", environment: .production, token: "0a1b", reason: "ExpiredToken", time: 17)
        #expect(String(decoding: feedbackValue(entry), as: UTF8.self) == "1 production 17 ExpiredToken 0a1b")
        let android = FeedbackEntry(app: "droid", environment: .production, platform: .android, token: "c1:APA91b",
                                    reason: "UNREGISTERED", time: 17)
        #expect(String(decoding: feedbackValue(android), as: UTF8.self) == "1 android 17 UNREGISTERED c1:APA91b")
    }

    static let refused: [(String, [UInt8], FeedbackValueError)] = [
        ("empty", [], .notFiveFields),
        ("four fields", Array("1 production 17 Unregistered".utf8), .notFiveFields),
        ("six fields", Array("1 production 17 Unregistered abc def".utf8), .notFiveFields),
        ("two spaces", Array("1 production  17 Unregistered abc".utf8), .notFiveFields),
        ("version 2", Array("2 production 17 Unregistered abc".utf8), .unknownVersion),
        ("another environment", Array("1 sandbox 17 Unregistered abc".utf8), .unknownEnvironment),
        ("a negative time", Array("1 production -17 Unregistered abc".utf8), .badTime),
        ("a time past Int64", Array("1 production 99999999999999999999 Unregistered abc".utf8), .badTime),
        ("no time", Array("1 production  Unregistered abc".utf8), .badTime),
        ("a time with a letter", Array("1 production 1x Unregistered abc".utf8), .badTime),
        ("a reason with a digit", Array("1 production 17 Unregistered1 abc".utf8), .badReason),
        ("a reason of 65 letters", Array("1 production 17 \(String(repeating: "a", count: 65)) abc".utf8), .badReason),
        ("a token with a control", Array("1 production 17 Unregistered ab\u{1}c".utf8), .badToken),
        ("a token with invalid UTF-8", Array("1 production 17 Unregistered ab".utf8) + [0xFF, 0xFE], .badToken),
        ("a token of 257 bytes", Array("1 production 17 Unregistered \(String(repeating: "a", count: 257))".utf8), .badToken),
        ("a megabyte", [UInt8](repeating: 0x61, count: 1 << 20), .tooLong),
        ("an android token of 4097 bytes", Array("1 android 17 UNREGISTERED \(String(repeating: "a", count: 4097))".utf8),
         .badToken),
        ("an android token outside FCM's syntax", Array("1 android 17 UNREGISTERED ab.c".utf8), .badToken),
        ("an APNs token of FCM's length", Array("1 production 17 Unregistered \(String(repeating: "a", count: 300))".utf8),
         .badToken),
        ("JSON", Array(#"{"token":"abc","reason":"Unregistered"}"#.utf8), .notFiveFields),
    ]

    @Test("a value that is not an entry is refused with a reason that shows none of it", arguments: refused)
    func refusesGarbage(name: String, value: [UInt8], error: FeedbackValueError) {
        #expect(decodeFeedbackValue(value, app: "toot") == .failure(error), "\(name)")
        #expect(!error.description.contains("abc"))
    }
}
