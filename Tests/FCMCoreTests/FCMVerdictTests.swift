// The decision table: each FCM answer, and each token request that brought
// no token, to what the Web Push sender gets and what else happens.

import FCMCore
import Testing

/// One row: an answer (status, body, Retry-After), whether the token was
/// already refreshed, and the verdict.
struct VerdictRow: Sendable, CustomTestStringConvertible {
    var status: Int
    var body: String
    var retryAfter: Int? = nil
    var afterTokenRefresh = false
    var verdict: FCMVerdict
    var testDescription: String { "\(status) \(body.prefix(60)) refreshed=\(afterTokenRefresh)" }
}

@Suite("What an FCM answer means")
struct FCMVerdictTests {
    static let rows: [VerdictRow] = [
        VerdictRow(status: 200, body: FCMAnswers.sent, verdict: .delivered),
        VerdictRow(status: 200, body: FCMAnswers.sent, afterTokenRefresh: true, verdict: .delivered),
        VerdictRow(status: 404, body: FCMAnswers.unregistered, verdict: .tokenDead(.unregistered)),
        VerdictRow(status: 403, body: FCMAnswers.senderIDMismatch, verdict: .tokenDead(.senderIDMismatch)),
        VerdictRow(status: 400, body: FCMAnswers.invalidToken, verdict: .tokenDead(.invalidArgument)),
        VerdictRow(status: 400, body: FCMAnswers.invalidTokenDocumented, verdict: .tokenDead(.invalidArgument)),
        VerdictRow(status: 400, body: FCMAnswers.invalidData, verdict: .failed(detail:
            #"FCM answered 400 INVALID_ARGUMENT "Invalid value at 'message.data[0].value'…""#)),
        VerdictRow(status: 400, body: FCMAnswers.missingRecipient, verdict: .failed(detail:
            #"FCM answered 400 INVALID_ARGUMENT "Recipient of the message is not set.""#)),
        VerdictRow(status: 400, body: FCMAnswers.tooLarge, verdict: .failed(detail:
            #"FCM answered 400 INVALID_ARGUMENT "Request contains an invalid argument.""#)),
        VerdictRow(status: 429, body: FCMAnswers.quotaExceeded, retryAfter: 120, verdict: .retryLater(seconds: 120, detail:
            #"FCM answered 429 QUOTA_EXCEEDED "Quota exceeded for quota metric 'Send re…""#)),
        VerdictRow(status: 429, body: FCMAnswers.quotaExceeded, verdict: .retryLater(seconds: 60, detail:
            #"FCM answered 429 QUOTA_EXCEEDED "Quota exceeded for quota metric 'Send re…""#)),
        VerdictRow(status: 429, body: "", verdict: .retryLater(seconds: 60, detail: "FCM answered 429 RESOURCE_EXHAUSTED")),
        VerdictRow(status: 500, body: FCMAnswers.internalError, verdict: .retryLater(seconds: 10, detail:
            #"FCM answered 500 INTERNAL "Internal error encountered.""#)),
        VerdictRow(status: 503, body: FCMAnswers.unavailable, retryAfter: 0, verdict: .retryLater(seconds: 0, detail:
            #"FCM answered 503 UNAVAILABLE "The service is currently unavailable.""#)),
        VerdictRow(status: 502, body: FCMAnswers.frontEnd502, retryAfter: 30, verdict: .retryLater(seconds: 30, detail:
            #"FCM answered 502 "HTTP 502""#)),
        VerdictRow(status: 504, body: "", verdict: .retryLater(seconds: 10, detail: #"FCM answered 504 "HTTP 504""#)),
        VerdictRow(status: 401, body: FCMAnswers.thirdPartyAuth, verdict: .credentialsRejected(detail:
            #"FCM answered 401 THIRD_PARTY_AUTH_ERROR "Auth error from APNS or Web Push Service""#)),
        VerdictRow(status: 401, body: FCMAnswers.unauthenticated, verdict: .refreshAccessTokenAndResend),
        VerdictRow(status: 401, body: FCMAnswers.unauthenticated, afterTokenRefresh: true, verdict: .credentialsRejected(detail:
            #"FCM answered 401 UNAUTHENTICATED "Request had invalid authentication crede…""#)),
        VerdictRow(status: 403, body: FCMAnswers.permissionDenied, verdict: .refreshAccessTokenAndResend),
        VerdictRow(status: 403, body: FCMAnswers.permissionDenied, afterTokenRefresh: true, verdict: .credentialsRejected(detail:
            #"FCM answered 403 PERMISSION_DENIED "Permission 'cloudmessaging.messages.crea…""#)),
        VerdictRow(status: 403, body: "", afterTokenRefresh: true, verdict: .credentialsRejected(detail:
            "FCM answered 403 PERMISSION_DENIED")),
        // Never a dead token on an ambiguous answer.
        VerdictRow(status: 404, body: FCMAnswers.projectNotFound, verdict: .failed(detail:
            #"FCM answered 404 NOT_FOUND "Requested entity was not found.""#)),
        VerdictRow(status: 404, body: "", verdict: .failed(detail: "FCM answered 404 NOT_FOUND")),
        VerdictRow(status: 400, body: "", verdict: .failed(detail: "FCM answered 400 INVALID_ARGUMENT")),
        VerdictRow(status: 413, body: "", verdict: .failed(detail: #"FCM answered 413 "HTTP 413""#)),
        VerdictRow(status: 301, body: "", verdict: .failed(detail: #"FCM answered 301 "HTTP 301""#)),
        VerdictRow(status: 400, body: #"{"error":{"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNSPECIFIED_ERROR"}]}}"#,
                   verdict: .failed(detail: "FCM answered 400 UNSPECIFIED_ERROR")),
        VerdictRow(status: 500, body: #"{"error":{"details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNSPECIFIED_ERROR"}]}}"#,
                   verdict: .retryLater(seconds: 10, detail: "FCM answered 500 UNSPECIFIED_ERROR")),
        // A body that contradicts a 5xx does not make a token dead.
        VerdictRow(status: 503, body: FCMAnswers.unregistered.replacingOccurrences("404", "503"), verdict: .retryLater(
            seconds: 10, detail: #"FCM answered 503 UNREGISTERED "Requested entity was not found.""#)),
        VerdictRow(status: 500, body: FCMAnswers.invalidToken, verdict: .retryLater(seconds: 10, detail:
            #"FCM answered 500 INVALID_ARGUMENT about message.token "Request contains an invalid argument.""#)),
    ]

    @Test("the decision table", arguments: rows)
    func decision(row: VerdictRow) {
        let answer = FCMSendAnswer(status: row.status, body: Array(row.body.utf8))
        #expect(FCMVerdict(.answered(answer, retryAfterSeconds: row.retryAfter), afterTokenRefresh: row.afterTokenRefresh)
            == row.verdict)
    }

    @Test("no answer in time is a 504")
    func timeout() {
        #expect(FCMVerdict(.timedOut, afterTokenRefresh: false) == .timedOut)
        #expect(FCMVerdict.timedOut.webPushStatus == 504)
    }

    @Test("each verdict's status for the sender", arguments: [
        (FCMVerdict.delivered, 201), (.tokenDead(.unregistered), 410), (.retryLater(seconds: 1, detail: ""), 503),
        (.credentialsRejected(detail: ""), 502), (.failed(detail: ""), 502), (.timedOut, 504),
    ] as [(FCMVerdict, Int)])
    func statuses(verdict: FCMVerdict, status: Int) {
        #expect(verdict.webPushStatus == status)
    }

    @Test("a token refresh has no status of its own")
    func refreshHasNoStatus() {
        #expect(FCMVerdict.refreshAccessTokenAndResend.webPushStatus == nil)
    }

    @Test("a token request that brought no token", arguments: [
        (OAuthTokenAnswer.refused(OAuthRefusal(status: 400, code: .invalidGrant, errorDescription: "Invalid JWT Signature.")), nil,
         FCMVerdict.credentialsRejected(detail: "the token endpoint oauth2.googleapis.com refused the service account "
            + "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com (key 0123456789abcdef0123456789abcdef01234567, "
            + #"project toot-relay-test): 400 "invalid_grant" "Invalid JWT Signature.""#)),
        (.refused(OAuthRefusal(status: 401, code: .invalidClient)), nil, .credentialsRejected(detail:
            "the token endpoint oauth2.googleapis.com refused the service account "
            + "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com (key 0123456789abcdef0123456789abcdef01234567, "
            + #"project toot-relay-test): 401 "invalid_client""#)),
        (.refused(OAuthRefusal(status: 400, code: .invalidScope)), nil, .failed(detail:
            #"the token endpoint oauth2.googleapis.com refused the token request: 400 "invalid_scope""#)),
        (.unavailable(status: 503), 10, .retryLater(seconds: 10, detail: "the token endpoint oauth2.googleapis.com answered 503")),
        (.unavailable(status: 500), nil, .retryLater(seconds: 60, detail: "the token endpoint oauth2.googleapis.com answered 500")),
        (.malformed(reason: "a 200 whose token_type is not Bearer"), nil, .failed(detail:
            "the token endpoint oauth2.googleapis.com answered a 200 whose token_type is not Bearer")),
    ] as [(OAuthTokenAnswer, Int?, FCMVerdict)])
    func tokenFailures(answer: OAuthTokenAnswer, retryAfter: Int?, verdict: FCMVerdict) throws {
        #expect(FCMVerdict(answer, account: try consoleAccount(), retryAfterSeconds: retryAfter) == verdict)
    }

    @Test("a token is no verdict: the send goes on")
    func tokenIsNoVerdict() throws {
        #expect(FCMVerdict(.token(OAuthAccessToken(value: "t", expiresInSeconds: 1)), account: try consoleAccount()) == nil)
    }
}
