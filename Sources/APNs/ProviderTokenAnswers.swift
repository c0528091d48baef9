import APNsCore
import HTTP2Client

/// What APNs' answers about the provider token lead to, for one request
/// that carried a token (a notification or a broadcast API call):
/// - 403 UnrelatedKeyIdInToken: APNs binds a connection to the key of
///   its first token ("To use this token, open a new connection"), so
///   that connection drains and the request goes to another;
/// - 429 TooManyProviderTokenUpdates: the token was an update too many;
///   the token provider is told (`tokenUpdatesRefused`: it goes back to
///   the token before, or holds renewals) and the request goes again
///   once, with the token then current. A second refusal is the answer;
/// - 403 ExpiredProviderToken, InvalidProviderToken: the answer is the
///   request's, and the token provider hears of it (`tokenRejected`).
struct ProviderTokenAnswers {
    /// Sent again after 429 TooManyProviderTokenUpdates (that is done once).
    private(set) var resentForTokenUpdates = false

    mutating func policy(status: Int, reason: APNsReason) -> AnswerPolicy {
        switch reason {
        case .unrelatedKeyIdInToken:
            return AnswerPolicy(resend: .anotherConnection)
        case .tooManyProviderTokenUpdates:
            guard !resentForTokenUpdates else { return AnswerPolicy(resend: .no, refusal: .renewedTooOften) }
            resentForTokenUpdates = true
            return AnswerPolicy(resend: .anyConnection, refusal: .renewedTooOften)
        case .expiredProviderToken, .invalidProviderToken:
            return status == 403 ? AnswerPolicy(resend: .no, refusal: .rejected) : .complete
        default:
            return .complete
        }
    }
}
