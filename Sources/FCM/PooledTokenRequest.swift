import FCMCore
import HTTP2
import HTTP2Client
import HTTPCore

/// One access-token request in the pool to a token endpoint: `POST
/// <target>` with the form-encoded assertion (RFC 7523 §2.1), its answer
/// handed back as status, body and `Retry-After`.
final class PooledTokenRequest: PooledRequest {
    let target: String
    let form: [UInt8]
    let completion: (TokenFetchResult) -> Void
    var retryAfterSeconds: Int?

    init(target: String, form: [UInt8], completion: @escaping (TokenFetchResult) -> Void) {
        self.target = target
        self.form = form
        self.completion = completion
        super.init(bodyByteCount: form.count)
    }

    override func submit(on session: HTTP2ClientSession, authority: String,
                         authorization: String?) throws(HTTP2Error) -> Int32 {
        // The body is the credential (the signed assertion); the fields are not.
        try session.submitRequest(
            method: "POST", path: target, authority: authority,
            fields: [HTTPField(name: "content-type", value: ServiceAccountAssertion.contentType)],
            body: form)
    }

    override func readResponseFields(_ fields: HTTP2HeaderFields) {
        if status != 200, let value = fields.value(for: "retry-after") {
            retryAfterSeconds = retryAfterDelaySeconds(value[...].utf8, atMost: FCMClient.maxRetryAfterSeconds)
        }
    }

    override func complete(_ answer: PooledAnswer) {
        switch answer {
        case .answered(let status):
            completion(.answered(status: status, body: body, retryAfterSeconds: retryAfterSeconds))
        case .failed(let failure):
            completion(.failed(Self.words(failure)))
        }
    }

    static func words(_ failure: RequestFailure) -> String {
        switch failure {
        case .answerTimedOut: "no answer in time"
        case .connectFailed(let detail): "cannot connect: \(detail)"
        case .tlsFailed(let detail): "TLS failed: \(detail)"
        case .streamFailed(let detail): "stream failed: \(detail)"
        case .allConnectionsDown: "no connection is up"
        case .overloaded: "too many token requests waiting"
        }
    }
}
