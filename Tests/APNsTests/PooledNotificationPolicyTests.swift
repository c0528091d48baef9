import APNsCore
import HTTP2Client
import TestSupport
import Testing
@testable import APNs

/// APNs' side of a pooled notification: its answers about the provider
/// token as resend policies (what the pool machine does with each is
/// HTTP2ClientTests' `HTTP2PoolMachineAnswerPolicyTests`), and the sender's
/// view of an answer.
@Suite("APNs pooled notification: policies and deliveries")
struct PooledNotificationPolicyTests {
    static func answered(_ status: Int, _ reason: APNsReason, stamp: Int? = 1_700_000_000) -> PooledNotification {
        // makeNotification fails only for input the fixtures never give.
        let request = PooledNotification(notification: try! Fixtures.notification(token: Fixtures.deviceToken(0))) { _ in }
        request.authorizationStamp = stamp
        request.status = status
        request.body = Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8)
        request.responseAPNsID = request.notification.apnsID
        return request
    }

    @Test("APNs' answers about the provider token, for a request that carried one", arguments: [
        // Bound to another key: drain that connection, send elsewhere.
        (403, APNsReason.unrelatedKeyIdInToken, AnswerPolicy(resend: .anotherConnection)),
        // An update too many: the provider hears of it, the request goes again (once).
        (429, .tooManyProviderTokenUpdates, AnswerPolicy(resend: .anyConnection, refusal: .renewedTooOften)),
        // Expired or invalid: the provider hears of it, the answer is the request's.
        (403, .expiredProviderToken, AnswerPolicy(resend: .no, refusal: .rejected)),
        (403, .invalidProviderToken, AnswerPolicy(resend: .no, refusal: .rejected)),
        // Other answers about the token are not sent again.
        (403, .badEnvironmentKeyInToken, AnswerPolicy.complete),
        (403, .badEnvironmentKeyIdInToken, .complete),
        (429, .tooManyRequests, .complete),
        (403, .unknown("SomethingNew"), .complete),
    ])
    func tokenAnswers(status: Int, reason: APNsReason, policy: AnswerPolicy) {
        #expect(Self.answered(status, reason).policy(afterAnswer: status) == policy)
    }

    @Test("without a provider token (certificate auth) these answers are the request's own", arguments: [
        (403, APNsReason.unrelatedKeyIdInToken), (429, .tooManyProviderTokenUpdates), (403, .expiredProviderToken),
    ])
    func tokenAnswersWithoutToken(status: Int, reason: APNsReason) {
        #expect(Self.answered(status, reason, stamp: nil).policy(afterAnswer: status) == .complete)
    }

    @Test("429 TooManyProviderTokenUpdates is sent again once: a second refusal is the answer, the provider still hears")
    func tooManyTokenUpdatesOnce() {
        let request = Self.answered(429, .tooManyProviderTokenUpdates)
        #expect(request.policy(afterAnswer: 429) == AnswerPolicy(resend: .anyConnection, refusal: .renewedTooOften))
        #expect(request.tokenAnswers.resentForTokenUpdates)
        #expect(request.policy(afterAnswer: 429) == AnswerPolicy(resend: .no, refusal: .renewedTooOften))
    }

    @Test("an attempt sent again forgets its answer, so the next one is read on its own")
    func forgetAnswer() {
        let request = Self.answered(429, .tooManyProviderTokenUpdates)
        request.retryAfterSeconds = 30
        request.forgetAnswer()
        #expect(request.status == nil && request.body.isEmpty && request.responseAPNsID == nil)
        #expect(request.retryAfterSeconds == nil)
    }

    @Test("an answer is APNs' status and reason for the sender; a failure is the outcome of the same name")
    func deliveries() {
        let request = Self.answered(403, .expiredProviderToken)
        #expect(request.delivery(.answered(status: 403)).outcome
            == .apns(status: 403, reason: .expiredProviderToken, apnsID: request.notification.apnsID))
        let failures: [(RequestFailure, DeliveryOutcome)] = [
            (.answerTimedOut, .answerTimedOut), (.connectFailed("x"), .connectFailed("x")),
            (.tlsFailed("y"), .tlsFailed("y")), (.streamFailed("z"), .streamFailed("z")),
            (.allConnectionsDown, .allConnectionsDown), (.overloaded, .overloaded),
        ]
        for (failure, outcome) in failures {
            #expect(request.delivery(.failed(failure)) == APNsDelivery(outcome: outcome))
        }
    }
}
