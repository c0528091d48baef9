import APNsCore
import HTTP2
import HTTP2Client
import HTTPCore

/// One broadcast API call in a pool: the request as the caller's fields
/// and body, the answer's fields kept as APNs sent them (those
/// `APNsBroadcastAnswer.passedBackFields` names), and the provider-token
/// answers handled as a notification's are.
final class PooledBroadcast: PooledRequest {
    let request: APNsBroadcastRequest
    private let completion: (APNsBroadcastAnswer) -> Void
    private var answerFields: [HTTPField] = []
    private var tokenAnswers = ProviderTokenAnswers()

    /// An all-channels answer lists up to `maximumChannelsPerApp` ids of
    /// up to `maximumLength` characters each, quoted and comma-separated:
    /// it must arrive whole, or the caller gets JSON cut in the middle.
    static let maxAnswerBodyBytes = APNsChannelID.maximumChannelsPerApp * (APNsChannelID.maximumLength + 3) + 64

    init(request: APNsBroadcastRequest, completion: @escaping (APNsBroadcastAnswer) -> Void) {
        self.request = request
        self.completion = completion
        super.init(bodyByteCount: request.body.count, maxAnswerBodyBytes: Self.maxAnswerBodyBytes)
    }

    override func submit(on session: HTTP2ClientSession, authority: String,
                         authorization: String?) throws(HTTP2Error) -> Int32 {
        try session.submitRequest(
            method: request.method, path: request.path, authority: authority,
            fields: APNsRequestFields(headers: request.headers, authorization: authorization),
            body: request.body)
    }

    override func readResponseFields(_ fields: HTTP2HeaderFields) {
        for field in fields where APNsBroadcastAnswer.passedBackFields.contains(field.name) {
            answerFields.append(HTTPField(name: field.name, value: field.value))
        }
    }

    override func policy(afterAnswer status: Int) -> AnswerPolicy {
        guard status == 403 || status == 429, authorizationStamp != nil,
              case .apns(_, let reason?, _) = APNsDelivery(status: status, apnsID: nil, body: body).outcome else {
            return .complete
        }
        return tokenAnswers.policy(status: status, reason: reason)
    }

    override func forgetAnswer() {
        super.forgetAnswer()
        answerFields.removeAll()
    }

    override func complete(_ answer: PooledAnswer) {
        switch answer {
        case .answered(let status):
            completion(.answered(status: status, headers: answerFields, body: body))
        case .failed(let failure):
            completion(.failed(failure.deliveryOutcome))
        }
    }
}
