/// How one delivery attempt ended.
public enum DeliveryOutcome: Sendable, Equatable {
    /// APNs answered. `reason` is nil on success or when the body had none.
    case apns(status: Int, reason: APNsReason?, apnsID: String?)
    /// No answer within the APNs timeout.
    case answerTimedOut
    case connectFailed(String)
    case tlsFailed(String)
    /// The stream was reset or the connection lost before an answer.
    case streamFailed(String)
    /// No APNs connection for this environment is up.
    case allConnectionsDown
    /// The relay is over its in-flight limit.
    case overloaded
}

/// What an outcome says about the relay's own APNs credentials (certificate
/// or provider token). The one place that decides it: the status mapping,
/// the pool's rejection flag and the health check all ask here.
public enum CredentialVerdict: Sendable, Equatable {
    /// APNs accepted a notification: the credentials work.
    case accepted
    /// APNs answered 403: it refused the credentials themselves, whatever
    /// the reason (BadCertificate, ExpiredProviderToken, …). Never the
    /// subscription's fault.
    case rejected
}

extension DeliveryOutcome {
    /// nil when the outcome says nothing about the credentials (another
    /// APNs status, or no answer at all).
    public var credentialVerdict: CredentialVerdict? {
        guard case .apns(let status, _, _) = self else { return nil }
        switch status {
        case 200: return .accepted
        case 403: return .rejected
        default: return nil
        }
    }
}
