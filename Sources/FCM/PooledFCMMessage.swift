import FCMCore
import HTTP2
import HTTP2Client
import HTTPCore

/// One FCM send in the client's pool: `POST <account.sendPath>` with the
/// message and the account's access token as its bearer, FCM's
/// `Retry-After` kept, and the answer handed to the client, which decides
/// between the sender's completion and a send again with a fresh token.
final class PooledFCMMessage: PooledRequest {
    let notification: FCMNotification
    /// The access token the message goes with, as the token source gave it.
    let accessToken: String
    /// Sent again after FCM refused the token it went with first.
    let afterTokenRefresh: Bool
    let completion: (FCMDelivery) -> Void
    /// Who reads the answer (`FCMClient.finished`).
    unowned let client: FCMClient
    /// An error answer's `Retry-After`, in seconds.
    var retryAfterSeconds: Int?

    init(_ notification: FCMNotification, accessToken: String, afterTokenRefresh: Bool, client: FCMClient,
         completion: @escaping (FCMDelivery) -> Void) {
        self.notification = notification
        self.accessToken = accessToken
        self.afterTokenRefresh = afterTokenRefresh
        self.client = client
        self.completion = completion
        super.init(bodyByteCount: notification.body.count)
    }

    override func submit(on session: HTTP2ClientSession, authority: String,
                         authorization: String?) throws(HTTP2Error) -> Int32 {
        // The bearer is a credential for an hour: never indexed (RFC 7541
        // §7.1.3), as a value an observer of the compressed size could guess.
        try session.submitRequest(
            method: "POST", path: notification.account.sendPath, authority: authority,
            fields: [
                HTTPField(name: "content-type", value: "application/json"),
                HTTPField(name: "authorization", value: "Bearer " + accessToken, neverIndexed: true),
            ],
            body: notification.body)
    }

    override func readResponseFields(_ fields: HTTP2HeaderFields) {
        if status != 200, let value = fields.value(for: "retry-after") {
            retryAfterSeconds = retryAfterDelaySeconds(value[...].utf8, atMost: FCMClient.maxRetryAfterSeconds)
        }
    }

    override func forgetAnswer() {
        super.forgetAnswer()
        retryAfterSeconds = nil
    }

    override func complete(_ answer: PooledAnswer) {
        client.finished(self, answer)
    }

    /// How the send ended, FCM's answer read by FCMCore.
    func outcome(_ answer: PooledAnswer) -> FCMOutcome {
        switch answer {
        case .answered(let status):
            .answered(FCMSendAnswer(status: status, body: body), retryAfterSeconds: retryAfterSeconds,
                      afterTokenRefresh: afterTokenRefresh)
        case .failed(let failure):
            failure.fcmOutcome
        }
    }
}

extension RequestFailure {
    /// The sender's outcome for a request the pool could not get answered.
    var fcmOutcome: FCMOutcome {
        switch self {
        case .answerTimedOut: .answerTimedOut
        case .connectFailed(let detail): .connectFailed(detail)
        case .tlsFailed(let detail): .tlsFailed(detail)
        case .streamFailed(let detail): .streamFailed(detail)
        case .allConnectionsDown: .allConnectionsDown
        case .overloaded: .overloaded
        }
    }
}
