import Feedback
import Foundation
import RelayCore
import Testing

@Suite struct FeedbackJSONTests {
    @Test("The pull body lists token, environment, reason and ISO 8601 UTC time per entry")
    func encodesEntries() throws {
        let entries = [
            FeedbackEntry(app: "toot", environment: .production, token: String(repeating: "ab", count: 32),
                          reason: "Unregistered", time: 1_700_000_000_123),
            FeedbackEntry(app: "toot", environment: .development, token: String(repeating: "cd", count: 32),
                          reason: "BadDeviceToken", time: 0),
        ]
        let body = feedbackJSON(entries)
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [[String: String]])
        #expect(decoded == [
            ["token": String(repeating: "ab", count: 32), "environment": "production", "reason": "Unregistered",
             "time": "2023-11-14T22:13:20.123Z"],
            ["token": String(repeating: "cd", count: 32), "environment": "development", "reason": "BadDeviceToken",
             "time": "1970-01-01T00:00:00.000Z"],
        ])
    }

    @Test("An FCM token's entry says its platform; an APNs entry's bytes are as before")
    func platform() {
        let android = FeedbackEntry(app: "droid", environment: .production, platform: .android, token: "c1:APA91b",
                                    reason: "UNREGISTERED", time: 0)
        let ios = FeedbackEntry(app: "toot", environment: .production, token: "ab", reason: "Unregistered", time: 0)
        #expect(String(decoding: feedbackJSON([android, ios]), as: UTF8.self) == "["
            + #"{"environment":"production","platform":"android","reason":"UNREGISTERED","time":"1970-01-01T00:00:00.000Z","token":"c1:APA91b"},"#
            + #"{"environment":"production","reason":"Unregistered","time":"1970-01-01T00:00:00.000Z","token":"ab"}]"#)
    }

    @Test("No entries is an empty JSON array")
    func encodesNothing() {
        #expect(String(decoding: feedbackJSON([]), as: UTF8.self) == "[]")
    }

    @Test("Reason text with quotes or controls stays valid JSON")
    func escapesText() throws {
        let entry = FeedbackEntry(app: "toot", environment: .production, token: "ab",
                                  reason: "Odd \"reason\"\n\\", time: 1)
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(feedbackJSON([entry]))) as? [[String: String]])
        #expect(decoded.first?["reason"] == "Odd \"reason\"\n\\")
    }
}

@Suite struct FeedbackTimeTextTests {
    static let table: [(milliseconds: Int64, text: String)] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
        (1_700_000_000_999, "2023-11-14T22:13:20.999Z"),
        (1_700_000_000_007, "2023-11-14T22:13:20.007Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
    ]

    @Test("Unix milliseconds become ISO 8601 UTC text with exact milliseconds", arguments: table)
    func formats(row: (milliseconds: Int64, text: String)) {
        #expect(feedbackTimeText(unixMilliseconds: row.milliseconds) == row.text)
    }
}
