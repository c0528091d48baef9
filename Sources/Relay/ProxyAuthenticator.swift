import APNsCore
import HTTPCore
import ProviderAPI
import RelayCore

/// One loop's check of who sends a `/3/device/` request
/// (`authorizeProxyRequest`): the provider-token verifier of the context's
/// credentials, rebuilt when a reload replaced them, its cache of verdicts
/// confined to the loop like the handler that owns it.
final class ProxyAuthenticator {
    private var credentials = ProxyCredentials.none
    private var verifier = ProxyCredentials.none.makeVerifier()

    /// The request's `clientCertificateSHA256` is the fingerprint of its
    /// connection's verified TLS client certificate, nil without one.
    func authorize(_ request: HTTP1Request, context: ProviderAPIContext, now: Int) -> Result<APIAuthorization, APNsProxyRefusal> {
        let (keyring, current) = context.proxyAuthentication()
        if current !== credentials {
            credentials = current
            verifier = current.makeVerifier()
        }
        return authorizeProxyRequest(authorization: request.headers["authorization"],
                                     clientCertificateSHA256: request.clientCertificateSHA256, keyring: keyring,
                                     credentials: current, verifier: verifier, now: now)
    }
}
