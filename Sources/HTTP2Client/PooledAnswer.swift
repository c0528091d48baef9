/// How a pooled request ended: the server's answer (its fields are on the
/// request: `status`, `body`, what `readResponseFields` kept) or the failure
/// that left it without one.
public enum PooledAnswer: Equatable, Sendable {
    case answered(status: Int)
    case failed(RequestFailure)
}

/// Why a request has no answer.
public enum RequestFailure: Equatable, Sendable {
    /// No answer within the pool's answer timeout, measured from `send`.
    case answerTimedOut
    /// Waiting for a connection whose attempt failed (`ConnectionFailure.connect`).
    case connectFailed(String)
    /// Waiting for a connection whose TLS or HTTP/2 handshake failed.
    case tlsFailed(String)
    /// Its stream or connection failed, or HTTP/2 cannot carry it.
    case streamFailed(String)
    /// No connection can be made now (backoff after failed attempts), or the
    /// pool is shutting down.
    case allConnectionsDown
    /// The queue of requests waiting for a stream is full.
    case overloaded
}

/// What an error answer leads to (`PooledRequest.policy(afterAnswer:)`).
public struct AnswerPolicy: Equatable, Sendable {
    public enum Resend: Equatable, Sendable {
        /// The answer is the request's.
        case no
        /// The request goes again, to any connection that takes it.
        case anyConnection
        /// The connection it went to takes no more requests (it drains);
        /// the request goes again on another, one opening if needed.
        case anotherConnection
    }

    public var resend: Resend
    /// The endpoint's authorizer hears first that the credential the
    /// request carried was refused (`RequestAuthorizer.credentialRefused`).
    public var refusal: CredentialRefusal?

    public init(resend: Resend, refusal: CredentialRefusal? = nil) {
        self.resend = resend
        self.refusal = refusal
    }

    public static let complete = AnswerPolicy(resend: .no)
}

/// How the server refused the credential a request's `authorization` carried.
public enum CredentialRefusal: Equatable, Sendable {
    /// Expired or invalid: the next request carries a new one.
    case rejected
    /// A credential renewed too often: go back to the one before, or hold renewals.
    case renewedTooOften
}

/// Gives requests their `authorization` field (bearer tokens), per endpoint.
/// Called on the pool's loop.
public protocol RequestAuthorizer: AnyObject {
    /// The field's value for the request about to go, and a stamp naming the
    /// credential it carries (its issue time, say).
    func authorization() -> (value: String, stamp: Int)
    /// The server refused the credential stamped `stamp` (a request's policy said so).
    func credentialRefused(_ refusal: CredentialRefusal, stamp: Int)
}
