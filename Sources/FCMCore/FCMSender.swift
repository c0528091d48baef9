/// The seam between the relay and the FCM client, as `NotificationSender`
/// is for APNs: the relay hands a built message to a sender on the same
/// event loop and gets the end of it back on that loop.
///
/// Contract (every implementation, real or fake):
/// - `send` is called on the sender's event-loop thread;
/// - `completion` runs exactly once, on that same thread, never inside the
///   `send` call itself;
/// - the sender fetches and keeps the service account's access token, and
///   after a 401 or 403 that a stale token may cause (`FCMVerdict`'s
///   `.refreshAccessTokenAndResend`) fetches a new one and sends once more;
///   the completion gets the last answer;
/// - a message is accepted by FCM at most once per `send`: a stream FCM
///   provably never processed (GOAWAY above last-stream-id, REFUSED_STREAM)
///   may go again, one it may have processed never.
public protocol FCMSender: AnyObject {
    func send(_ notification: FCMNotification, completion: @escaping (FCMDelivery) -> Void)
}

/// One FCM HTTP v1 send: `POST /v1/projects/<project_id>/messages:send`
/// with the message for one registration token, sent with `account`'s
/// access token.
public struct FCMNotification: Sendable {
    /// The service account the message goes out with: its project is the
    /// request's, its access token the request's bearer.
    public let account: FCMServiceAccount
    public let token: FCMToken
    /// The request body, `{"message":{…}}`.
    public let body: [UInt8]

    public init(account: FCMServiceAccount, token: FCMToken, body: [UInt8]) {
        (self.account, self.token, self.body) = (account, token, body)
    }
}

/// The end of one send.
public struct FCMDelivery: Sendable, Equatable {
    public var outcome: FCMOutcome

    public init(outcome: FCMOutcome) {
        self.outcome = outcome
    }

    /// What the end means for the sender and the relay.
    public var verdict: FCMVerdict { outcome.verdict }
}

/// How one send ended.
public enum FCMOutcome: Sendable, Equatable {
    /// FCM answered. `afterTokenRefresh`: the answer is the one to the
    /// message sent again with a fresh access token.
    case answered(FCMSendAnswer, retryAfterSeconds: Int?, afterTokenRefresh: Bool)
    /// The token endpoint brought no access token: what its answer means
    /// (`FCMVerdict.init(_:account:retryAfterSeconds:)`).
    case noAccessToken(FCMVerdict)
    /// No answer within FCM_TIMEOUT.
    case answerTimedOut
    case connectFailed(String)
    case tlsFailed(String)
    /// The stream was reset or the connection lost before an answer.
    case streamFailed(String)
    /// No FCM connection is up.
    case allConnectionsDown
    /// The relay is over its in-flight limit.
    case overloaded

    /// `Retry-After` of the relay's own refusals: as on the APNs path.
    public static let allConnectionsDownRetryAfterSeconds = 5
    public static let overloadedRetryAfterSeconds = 1

    /// The verdict on the outcome: FCM's answer by `FCMVerdict`'s table, the
    /// relay's own failures as on the APNs path (no connection: 502; none
    /// up, overloaded: 503; no answer: 504).
    public var verdict: FCMVerdict {
        switch self {
        case .answered(let answer, let retryAfter, let afterTokenRefresh):
            FCMVerdict(.answered(answer, retryAfterSeconds: retryAfter), afterTokenRefresh: afterTokenRefresh)
        case .noAccessToken(let verdict): verdict
        case .answerTimedOut: .timedOut
        case .connectFailed(let detail): .failed(detail: "cannot connect to FCM: \(detail)")
        case .tlsFailed(let detail): .failed(detail: "TLS with FCM failed: \(detail)")
        case .streamFailed(let detail): .failed(detail: "FCM stream failed: \(detail)")
        case .allConnectionsDown:
            .retryLater(seconds: Self.allConnectionsDownRetryAfterSeconds, detail: "no FCM connection is up")
        case .overloaded: .retryLater(seconds: Self.overloadedRetryAfterSeconds, detail: "relay overloaded, retry")
        }
    }
}
