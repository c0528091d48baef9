// What an FCM delivery's end means for the Web Push sender and the relay,
// by the rule the senders hold to: a 4xx only when the token can never work
// again (a sender deletes the subscription on one), a 5xx otherwise.
//
//   FCM answers                                   sender gets       also
//   200                                           201
//   404 UNREGISTERED                              410               feedback list and hook
//   403 SENDER_ID_MISMATCH                        410               the same (another project's token)
//   400 INVALID_ARGUMENT naming message.token     410               the same
//   400 INVALID_ARGUMENT about anything else      502               logged: the relay built a bad message
//   429 QUOTA_EXCEEDED                            503 + Retry-After (FCM's, else 60)
//   500 INTERNAL, 503 UNAVAILABLE (any 5xx)       503 + Retry-After (FCM's, else 10)
//   401 THIRD_PARTY_AUTH_ERROR                    502               app health: credentials rejected
//   other 401/403, after one token refresh        502               the same
//   no answer within FCM_TIMEOUT                  504

/// How a send ended.
public enum FCMSendResult: Sendable, Equatable {
    /// FCM answered; `retryAfterSeconds` is its `Retry-After` (delay-seconds,
    /// read by the caller's one reader of that header).
    case answered(FCMSendAnswer, retryAfterSeconds: Int?)
    /// No answer within FCM_TIMEOUT.
    case timedOut
}

/// What to do about it.
public enum FCMVerdict: Sendable, Equatable {
    /// 201.
    case delivered
    /// 410: the token can never work again; into the feedback list and hook.
    case tokenDead(FCMReason)
    /// 503 with `Retry-After: seconds`.
    case retryLater(seconds: Int, detail: String)
    /// Send the message once more with a new access token (a 401 or 403 the
    /// access token may cause: it may have expired or been revoked early).
    case refreshAccessTokenAndResend
    /// 502, and the app's health says its credentials are rejected.
    case credentialsRejected(detail: String)
    /// 502, logged: FCM or the token endpoint refused what the relay sent,
    /// or answered what the relay cannot read. Neither token nor app is blamed.
    case failed(detail: String)
    /// 504.
    case timedOut

    /// The wait a 503 asks for when FCM's 429 names none: a quota is
    /// counted per minute.
    public static let defaultRetryAfterSeconds = 60
    /// The wait when FCM's 5xx names none: FCM asks for an exponential
    /// back-off of at least 10 s on 5xx; the APNs path waits as long on
    /// APNs' 500 and 503.
    public static let unavailableRetryAfterSeconds = 10

    /// The status the Web Push sender gets; nil while the token is refreshed.
    public var webPushStatus: Int? {
        switch self {
        case .delivered: 201
        case .tokenDead: 410
        case .retryLater: 503
        case .refreshAccessTokenAndResend: nil
        case .credentialsRejected, .failed: 502
        case .timedOut: 504
        }
    }

    /// The verdict on a send. `afterTokenRefresh`: the message was already
    /// sent again with a fresh access token, so a 401 or 403 blames the
    /// credentials.
    public init(_ result: FCMSendResult, afterTokenRefresh: Bool) {
        guard case .answered(let answer, let retryAfter) = result else {
            self = .timedOut
            return
        }
        guard case .failed(let error) = answer else {
            self = .delivered
            return
        }
        let detail = "FCM answered \(error)"
        // Only a 4xx can say a token is dead: a body that says so beside a
        // 5xx contradicts its status, and a sender deletes the subscription.
        let refused = (400...499).contains(error.httpStatus)
        switch error.reason {
        case .unregistered where refused, .senderIDMismatch where refused:
            self = .tokenDead(error.reason)
        case .invalidArgument where refused && error.namesToken:
            self = .tokenDead(error.reason)
        case .thirdPartyAuthError:
            self = .credentialsRejected(detail: detail)
        case _ where error.httpStatus == 401 || error.httpStatus == 403:
            self = afterTokenRefresh ? .credentialsRejected(detail: detail) : .refreshAccessTokenAndResend
        case .quotaExceeded, .resourceExhausted:
            self = .retryLater(seconds: retryAfter ?? Self.defaultRetryAfterSeconds, detail: detail)
        case .unavailable, .internalError:
            self = .retryLater(seconds: retryAfter ?? Self.unavailableRetryAfterSeconds, detail: detail)
        case _ where error.httpStatus == 429:
            self = .retryLater(seconds: retryAfter ?? Self.defaultRetryAfterSeconds, detail: detail)
        case _ where (500...599).contains(error.httpStatus):
            self = .retryLater(seconds: retryAfter ?? Self.unavailableRetryAfterSeconds, detail: detail)
        default:
            // A 400 about the message, a 404 without UNREGISTERED (an unknown
            // project), a status FCM does not send: never a dead token.
            self = .failed(detail: detail)
        }
    }

    /// The verdict on a token request that brought no token (nil when it
    /// did): `account` names the service account in the detail.
    public init?(_ answer: OAuthTokenAnswer, account: FCMServiceAccount, retryAfterSeconds: Int? = nil) {
        let endpoint = "the token endpoint \(account.tokenEndpoint.host)"
        switch answer {
        case .token:
            return nil
        case .refused(let refusal) where refusal.rejectsAccount:
            self = .credentialsRejected(detail: "\(endpoint) refused the service account \(account): \(refusal)")
        case .refused(let refusal):
            self = .failed(detail: "\(endpoint) refused the token request: \(refusal)")
        case .unavailable(let status):
            self = .retryLater(seconds: retryAfterSeconds ?? Self.defaultRetryAfterSeconds,
                               detail: "\(endpoint) answered \(status)")
        case .malformed(let reason):
            self = .failed(detail: "\(endpoint) answered \(reason)")
        }
    }
}
