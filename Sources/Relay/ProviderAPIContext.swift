import AsyncPush
import Feedback
import ProviderAPI
import Provisioning
import RelayCore
import Locking
import XMLRPC

/// What every loop's provider API handler shares: the keys
/// (replaced by a reload of the apps file), the provisioned apps, the
/// feedback list and hook, and the request limits.
public final class ProviderAPIContext: Sendable {
    private let keyring: Locked<APIKeyring>
    /// The provider-token keys and client certificates `/3/device/` also
    /// takes (replaced by a reload, with the keys).
    private let proxyCredentials = Locked(ProxyCredentials.none)
    public let provisioned: ProvisionedApps
    public let feedback: FeedbackSink
    public let limits: ProviderLimits
    public let xmlLimits: XMLRPCLimits
    /// API_PROVISION_DIR: pyapns' `provision` may name a certificate file
    /// inside it; nil: PEM text only.
    public let provisionDirectory: String?
    /// The asynchronous `/api/push`'s settings and counts.
    public let async: AsyncPushes

    public init(keyring: APIKeyring, provisioned: ProvisionedApps, feedback: FeedbackSink,
                limits: ProviderLimits, xmlLimits: XMLRPCLimits, provisionDirectory: String?,
                async: AsyncPushes) {
        self.async = async
        self.keyring = Locked(keyring)
        self.provisioned = provisioned
        self.feedback = feedback
        self.limits = limits
        self.xmlLimits = xmlLimits
        self.provisionDirectory = provisionDirectory
    }

    /// What a request's `Authorization` allows. No key configured: every
    /// request may send for every app (keys are optional only on
    /// a loopback API_BIND, which the apps loader enforces at start-up and
    /// on every reload, so an empty keyring is a loopback one).
    func authorize(_ header: String?) -> APIAuthorization {
        let keys = keyring.withLock { $0 }
        if keys.isEmpty { return .key(name: "-", apps: .all) }
        return keys.authorize(authorization: header)
    }

    /// The app `id` among `configured` (the apps file's, as a loop serves
    /// them), else a provisioned one.
    func app(id: String, configured: RelayApps) -> RelayApp? {
        configured.app(for: .id(id)) ?? provisioned.app(id: id)
    }

    /// The keys and the proxy's credentials now, for one `/3/device/` request.
    func proxyAuthentication() -> (APIKeyring, ProxyCredentials) {
        (keyring.withLock { $0 }, proxyCredentials.withLock { $0 })
    }

    /// The proxy's token keys and certificates, at start and after a reload.
    public func replaceProxyCredentials(_ credentials: ProxyCredentials) {
        proxyCredentials.withLock { $0 = credentials }
    }

    /// The keys of a reloaded apps file (with API_KEYS').
    public func replaceKeyring(_ keys: APIKeyring) {
        keyring.withLock { $0 = keys }
    }
}
