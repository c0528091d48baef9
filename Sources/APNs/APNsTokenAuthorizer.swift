import HTTP2Client

/// A credential's provider token as the authorization of its pool's
/// requests: the current token with its `iat` as the stamp, and APNs'
/// refusals of a token handed back to the provider by that `iat`.
final class APNsTokenAuthorizer: RequestAuthorizer {
    let provider: APNsTokenProvider
    /// Unix seconds.
    let wallClock: @Sendable () -> Int

    init(provider: APNsTokenProvider, wallClock: @escaping @Sendable () -> Int) {
        self.provider = provider
        self.wallClock = wallClock
    }

    func authorization() -> (value: String, stamp: Int) {
        let (value, issuedAt) = provider.currentAuthorization(now: wallClock())
        return (value, issuedAt)
    }

    func credentialRefused(_ refusal: CredentialRefusal, stamp: Int) {
        switch refusal {
        case .rejected: provider.tokenRejected(issuedAt: stamp, now: wallClock())
        case .renewedTooOften: provider.tokenUpdatesRefused(issuedAt: stamp, now: wallClock())
        }
    }
}
