import FCMCore
import Testing

@Suite struct FCMOutcomeTests {
    static let unregistered = FCMSendAnswer.failed(FCMError(httpStatus: 404, reason: .unregistered))
    static let unauthenticated = FCMSendAnswer.failed(FCMError(httpStatus: 401, reason: .unauthenticated))

    @Test(arguments: [
        (FCMOutcome.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false), 201),
        (.answered(unregistered, retryAfterSeconds: nil, afterTokenRefresh: false), 410),
        (.answered(unauthenticated, retryAfterSeconds: nil, afterTokenRefresh: true), 502),
        (.noAccessToken(.credentialsRejected(detail: "invalid_grant")), 502),
        (.noAccessToken(.retryLater(seconds: 7, detail: "503")), 503),
        (.answerTimedOut, 504),
        (.connectFailed("refused"), 502),
        (.tlsFailed("handshake"), 502),
        (.streamFailed("reset"), 502),
        (.allConnectionsDown, 503),
        (.overloaded, 503),
    ])
    func `every outcome reads as the status the Web Push sender gets`(outcome: FCMOutcome, status: Int) {
        #expect(outcome.verdict.webPushStatus == status)
    }

    @Test func `a 401 before any refresh asks for a new access token and another send`() {
        let outcome = FCMOutcome.answered(Self.unauthenticated, retryAfterSeconds: nil, afterTokenRefresh: false)
        #expect(outcome.verdict == .refreshAccessTokenAndResend)
    }

    @Test func `the relay's own refusals ask for the waits the APNs path asks for`() {
        #expect(FCMOutcome.allConnectionsDown.verdict == .retryLater(seconds: 5, detail: "no FCM connection is up"))
        #expect(FCMOutcome.overloaded.verdict == .retryLater(seconds: 1, detail: "relay overloaded, retry"))
    }
}
