// What the relay tells a Web Push sender for each FCM verdict (the
// answer table of WIRE.md §3.3, read once in FCMCore's `FCMVerdict`), by the rule
// of StatusMapping.swift: a 4xx only when the token can never work again.

import FCMCore
import HTTPCore

/// The answer to an FCM relay request. `messageID`: the id the relay chose
/// for the message (`Location` on 201); `ttl`: the TTL used, echoed on 201.
public func relayResponse(for verdict: FCMVerdict, messageID: String, ttl: Int) -> RelayResponse {
    switch verdict {
    case .delivered:
        return created(messageID: messageID, ttl: ttl)
    case .tokenDead(let reason):
        return failure(410, "registration token rejected by FCM (\(reason.text))")
    case .retryLater(let seconds, let detail):
        return failure(503, detail, retryAfter: seconds)
    case .credentialsRejected(let detail):
        var response = failure(502, "FCM rejected the relay's credentials: \(detail)")
        response.credentialsRejected = true
        return response
    case .failed(let detail):
        return failure(502, detail)
    case .refreshAccessTokenAndResend:
        // The sender resends with a fresh access token before it completes;
        // met here, the refusal is the relay's own.
        return failure(502, "FCM refused the relay's access token")
    case .timedOut:
        return failure(504, "FCM did not answer in time")
    }
}

extension FCMVerdict {
    /// The verdict as words for a failed-push log's `error` and a log
    /// line's reason: FCM's code for a dead token (as gorush writes FCM's
    /// error there), else the verdict's detail.
    public var failureText: String {
        switch self {
        case .delivered: "delivered"
        case .tokenDead(let reason): reason.text
        case .retryLater(_, let detail), .credentialsRejected(let detail), .failed(let detail): detail
        case .refreshAccessTokenAndResend: "FCM refused the access token"
        case .timedOut: "no answer from FCM in time"
        }
    }
}
