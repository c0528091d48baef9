import APNsCore
import Feedback
import RelayCore
import Testing

@Suite struct FeedbackReasonTests {
    // Apple's "Handling notification responses from APNs": 410 means the
    // token is gone; of the 400s only these two blame the token.
    static let table: [(status: Int, reason: APNsReason?, expected: String?)] = [
        (410, .unregistered, "Unregistered"),
        (410, .expiredToken, "ExpiredToken"),
        (410, nil, "Unregistered"),
        (410, .unknown("SomethingNew"), "SomethingNew"),
        (400, .badDeviceToken, "BadDeviceToken"),
        (400, .deviceTokenNotForTopic, "DeviceTokenNotForTopic"),
        (400, .badTopic, nil),
        (400, .payloadEmpty, nil),
        (400, nil, nil),
        (403, .badCertificate, nil),
        (404, .badPath, nil),
        (413, .payloadTooLarge, nil),
        (429, .tooManyRequests, nil),
        (500, .internalServerError, nil),
        (503, .serviceUnavailable, nil),
        (200, nil, nil),
    ]

    @Test("Only 410s and the token's own 400s are feedback", arguments: table)
    func decidesWhichAnswersAreFeedback(row: (status: Int, reason: APNsReason?, expected: String?)) {
        #expect(feedbackReason(status: row.status, reason: row.reason) == row.expected)
        let outcome = DeliveryOutcome.apns(status: row.status, reason: row.reason, apnsID: nil)
        #expect(feedbackReason(for: outcome) == row.expected)
    }

    @Test("An outcome without an APNs answer is never feedback",
          arguments: [DeliveryOutcome.answerTimedOut, .connectFailed("refused"), .tlsFailed("x"),
                      .streamFailed("reset"), .allConnectionsDown, .overloaded])
    func noAnswerIsNotFeedback(outcome: DeliveryOutcome) {
        #expect(feedbackReason(for: outcome) == nil)
    }

    @Test("A 410 entry carries APNs' timestamp, or the relay's clock without one")
    func unregisteredTakesTheAPNsTimestamp() throws {
        let stamped = try #require(FeedbackEntry(app: "toot", environment: .production, token: "ab", status: 410,
                                                 reason: .unregistered, apnsTimestamp: 1_700_000_000_000,
                                                 now: 1_800_000_000_000))
        #expect(stamped == FeedbackEntry(app: "toot", environment: .production, token: "ab",
                                         reason: "Unregistered", time: 1_700_000_000_000))
        let unstamped = try #require(FeedbackEntry(app: "toot", environment: .development, token: "ab", status: 410,
                                                   reason: .expiredToken, apnsTimestamp: nil, now: 1_800_000_000_000))
        #expect(unstamped.time == 1_800_000_000_000)
        #expect(unstamped.reason == "ExpiredToken")
    }

    @Test("A 400 entry is timed by the relay's clock, and other answers make no entry")
    func badDeviceTokenTakesTheRelayClock() throws {
        let entry = try #require(FeedbackEntry(app: "toot", environment: .production, token: "cd", status: 400,
                                               reason: .badDeviceToken, apnsTimestamp: 5, now: 1_800_000_000_000))
        #expect(entry.time == 1_800_000_000_000)
        #expect(FeedbackEntry(app: "toot", environment: .production, token: "cd", status: 400, reason: .badTopic,
                              apnsTimestamp: nil, now: 1) == nil)
    }
}
