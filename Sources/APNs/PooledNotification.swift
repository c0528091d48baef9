import APNsCore
import HTTP2
import HTTP2Client

/// One notification in a pool: the APNs request the pool sends for it, what
/// APNs' answer carries beyond the status (its apns-id, `Retry-After`), the
/// resend policy of APNs' answers about the provider token, and who waits
/// for the `APNsDelivery`. Subclassed only by `PooledProxiedNotification`.
class PooledNotification: PooledRequest {
    let notification: APNsNotification
    /// Who waits for the result, as they passed it (no wrapping closure on
    /// the relay's path, which would be one more allocation per notification).
    private let completion: (APNsDelivery) -> Void
    var responseAPNsID: String?
    /// An error answer's `Retry-After`, in seconds.
    var retryAfterSeconds: Int?
    var tokenAnswers = ProviderTokenAnswers()

    init(notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        self.notification = notification
        self.completion = completion
        super.init(bodyByteCount: notification.payload.count)
    }

    final override func submit(on session: HTTP2ClientSession, authority: String,
                               authorization: String?) throws(HTTP2Error) -> Int32 {
        try session.submitRequest(
            method: "POST", path: notification.path, authority: authority,
            fields: APNsRequestFields(headers: notification.headers, authorization: authorization),
            body: notification.payload)
    }

    override func readResponseFields(_ fields: HTTP2HeaderFields) {
        // APNs echoes the apns-id we sent: share our String rather than
        // building an equal one.
        if fields.value(for: "apns-id", equals: notification.apnsID) {
            responseAPNsID = notification.apnsID
        } else if let returned = fields.value(for: "apns-id") {
            responseAPNsID = returned
        }
        // Read only on an error answer: a 200 has nothing to wait for.
        if status != 200, let value = fields.value(for: "retry-after") {
            retryAfterSeconds = APNsDelivery.retryAfterSeconds(value[...].utf8)
        }
    }

    /// APNs' answers about the provider token (`ProviderTokenAnswers`),
    /// for a request that carried one (certificate auth: every answer is
    /// the request's own).
    final override func policy(afterAnswer status: Int) -> AnswerPolicy {
        guard status == 403 || status == 429, authorizationStamp != nil,
              case .apns(_, let reason?, _) = delivery(.answered(status: status)).outcome else { return .complete }
        return tokenAnswers.policy(status: status, reason: reason)
    }

    override func forgetAnswer() {
        super.forgetAnswer()
        responseAPNsID = nil
        retryAfterSeconds = nil
    }

    override func complete(_ answer: PooledAnswer) {
        completion(delivery(answer))
    }

    /// The answer as the sender reads it.
    final func delivery(_ answer: PooledAnswer) -> APNsDelivery {
        switch answer {
        case .answered(let status):
            APNsDelivery(status: status, apnsID: responseAPNsID, body: body, retryAfterSeconds: retryAfterSeconds)
        case .failed(let failure):
            APNsDelivery(outcome: failure.deliveryOutcome)
        }
    }
}

/// Apple's request at the provider API's `/3/device/` (`APNsClient.sendProxied`):
/// a notification whose answer's `apns-unique-id` (APNs sends one in the
/// development environment only) goes back to the client. Read here and
/// handed to the completion beside the delivery, not carried in
/// `APNsDelivery`: every route copies a delivery several times per
/// notification, and a field more in it costs them all (see its `detail`);
/// nor does any other route read the field.
final class PooledProxiedNotification: PooledNotification {
    private let answered: (APNsDelivery, _ uniqueID: String?) -> Void
    var uniqueID: String?

    init(notification: APNsNotification, completion: @escaping (APNsDelivery, _ uniqueID: String?) -> Void) {
        answered = completion
        // Not called: `complete` below hands the answer to `answered`.
        super.init(notification: notification) { _ in }
    }

    override func readResponseFields(_ fields: HTTP2HeaderFields) {
        super.readResponseFields(fields)
        uniqueID = fields.value(for: "apns-unique-id")
    }

    override func forgetAnswer() {
        super.forgetAnswer()
        uniqueID = nil
    }

    override func complete(_ answer: PooledAnswer) {
        answered(delivery(answer), uniqueID)
    }
}

extension RequestFailure {
    /// The sender's outcome for a request the pool could not get answered.
    var deliveryOutcome: DeliveryOutcome {
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
