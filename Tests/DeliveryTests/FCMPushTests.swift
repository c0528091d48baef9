import APNsCore
import FCMCore
import Feedback
import RelayCore
import Testing

@testable import Delivery
import TestSupport

/// FCM as a push service: how an FCM send's end reads as the end of a
/// delivery, and what the delivery path records with it.
@Suite("FCM as a push service")
struct FCMPushTests {
    static let token = FCMToken("cXyz_-1:APA91bTestToken")!

    static func answered(_ status: Int, _ reason: FCMReason, namesToken: Bool = false, retryAfter: Int? = nil,
                         afterRefresh: Bool = false) -> FCMOutcome {
        .answered(.failed(FCMError(httpStatus: status, reason: reason, namesToken: namesToken)),
                  retryAfterSeconds: retryAfter, afterTokenRefresh: afterRefresh)
    }

    static let sent = FCMOutcome.answered(.sent, retryAfterSeconds: nil, afterTokenRefresh: false)

    /// Every row of the answer table, with the relay's own failures:
    /// the result, the credential verdict, and whether the token is dead.
    static let readings: [(FCMOutcome, PushResult, CredentialVerdict?, String?)] = [
        (sent, .accepted, .accepted, nil),
        (answered(404, .unregistered), .refused, nil, "UNREGISTERED"),
        (answered(403, .senderIDMismatch), .refused, nil, "SENDER_ID_MISMATCH"),
        (answered(400, .invalidArgument, namesToken: true), .refused, nil, "INVALID_ARGUMENT"),
        (answered(400, .invalidArgument), .refused, nil, nil),
        (answered(429, .quotaExceeded, retryAfter: 30), .retryable, nil, nil),
        (answered(500, .internalError), .retryable, nil, nil),
        (answered(503, .unavailable), .retryable, nil, nil),
        (answered(401, .thirdPartyAuthError), .refused, .rejected, nil),
        (answered(401, .unauthenticated, afterRefresh: true), .refused, .rejected, nil),
        (answered(403, .permissionDenied, afterRefresh: true), .refused, .rejected, nil),
        (answered(401, .unauthenticated), .retryable, nil, nil),
        (.noAccessToken(.credentialsRejected(detail: "invalid_grant")), .refused, .rejected, nil),
        (.noAccessToken(.retryLater(seconds: 60, detail: "token endpoint 503")), .retryable, nil, nil),
        (.answerTimedOut, .retryable, nil, nil),
        (.connectFailed("refused"), .retryable, nil, nil),
        (.tlsFailed("handshake"), .retryable, nil, nil),
        (.streamFailed("reset"), .retryable, nil, nil),
        (.allConnectionsDown, .retryable, nil, nil),
        (.overloaded, .retryable, nil, nil),
    ]

    @Test("each outcome reads by FCMVerdict", arguments: readings)
    func reading(_ row: (FCMOutcome, PushResult, CredentialVerdict?, String?)) {
        let delivery = FCMDelivery(outcome: row.0)
        #expect(FCMPush.result(of: delivery) == row.1)
        #expect(FCMPush.credentialVerdict(of: delivery) == row.2)
        let entry = FCMPush.deadToken(in: delivery, recipient: Self.token, app: "droid")
        #expect(entry?.reason == row.3)
        if let entry {
            #expect(entry.app == "droid")
            #expect(entry.platform == .android)
            #expect(entry.token == Self.token.text)
        }
        let log = FCMPush.failedPushLog(for: delivery, token: Self.token.text, app: "droid", source: nil)
        #expect((log == nil) == (row.1 == .accepted))
        if let log {
            #expect(log.platform == "android")
            #expect(log.app == "droid")
            #expect(log.token == Self.token.text)
            if case .answered(.failed(let error), _, _) = row.0 {
                #expect(log.status == error.httpStatus)
                #expect(log.reason == error.reason.text)
            } else {
                #expect(log.status == nil)
            }
            #expect(!log.error.isEmpty)
        }
    }

    /// A path over a manual `FakeFCMSender`, an app with FCM credentials.
    struct Fixture {
        let sender = FakeFCMSender()
        let store = FeedbackStore(maxPerApp: 10)
        let path: DeliveryPath<FCMPush>
        let apnsHealth = AppHealth()
        let fcmHealth = AppHealth()
        let app: RelayApp

        init() {
            path = DeliveryPath(service: FCMPush(sender: sender), counters: InFlightDeliveries(maxInFlight: 10),
                                feedback: FeedbackSink(store: store, hook: nil))
            var app = RelayApp(id: "droid", topic: "", production: nil, development: nil, health: apnsHealth)
            app.fcm = FCMAppCredentials(account: FCMTestAccount.make(), health: fcmHealth)
            self.app = app
        }

        func deliver(_ outcome: FCMOutcome) -> (FCMDelivery, FailedPushLog?)? {
            var got: (FCMDelivery, FailedPushLog?)?
            let notification = FCMNotification(account: FCMTestAccount.make(), token: FCMPushTests.token, body: [])
            _ = path.deliver(notification, app: app, token: FCMPushTests.token.text, posting: .deadTokens) { got = ($0, $1) }
            sender.complete(with: outcome)
            return got
        }
    }

    @Test("a dead token goes into the app's feedback list as an android entry, and its log to the hook")
    func deadTokenIntoFeedback() {
        let fixture = Fixture()
        let got = fixture.deliver(Self.answered(404, .unregistered))
        #expect(got?.1?.platform == "android")
        let entries = fixture.store.take(app: "droid")
        #expect(entries.count == 1)
        #expect(entries.first?.platform == .android)
        #expect(entries.first?.reason == "UNREGISTERED")
        #expect(String(decoding: feedbackJSON(entries), as: UTF8.self).contains(#""platform":"android""#))
    }

    @Test("FCM's verdict on the service account is the app's FCM health, never its APNs health")
    func fcmHealthOnly() {
        let fixture = Fixture()
        _ = fixture.deliver(Self.answered(401, .thirdPartyAuthError))
        #expect(fixture.fcmHealth.credentialsRejected)
        #expect(!fixture.apnsHealth.credentialsRejected)
        #expect(fixture.app.credentialsRejected)
        _ = fixture.deliver(Self.sent)
        #expect(!fixture.fcmHealth.credentialsRejected)
        #expect(!fixture.app.credentialsRejected)
    }

    @Test("a failure that is not the token's records no feedback")
    func noFeedbackForOtherFailures() {
        let fixture = Fixture()
        for outcome in [Self.answered(400, .invalidArgument), Self.answered(503, .unavailable), .answerTimedOut] {
            _ = fixture.deliver(outcome)
        }
        #expect(fixture.store.take(app: "droid").isEmpty)
    }
}
