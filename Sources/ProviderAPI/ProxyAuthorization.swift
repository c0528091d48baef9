// Who may send through `/3/device/<token>` (WIRE.md §4.4), as APNs
// authenticates a provider: a TLS client certificate, a provider token
// (JWT), or the relay's API key as the bearer. Pure: the signature check
// each token key brings is injected, the clock is a parameter.

import APNsCore
import RelayCore

/// A key the relay checks provider tokens with: a `.p8` it holds for an app
/// (its team's apps), or an `[[api-key]]` entry's `jwt-public-key` (that
/// entry's apps). `verify` is TLS's ES256 check, injected.
public final class ProxyTokenKey: ProviderTokenKey, Sendable {
    public let keyID: String
    public let teamID: String
    /// Who a token of this key is, in logs and metrics: the `[[api-key]]`
    /// entry's name, or `token <kid>`.
    public let name: String
    public let apps: APIKeyApps
    private let verify: @Sendable ([UInt8], [UInt8]) -> Bool

    public init(keyID: String, teamID: String, name: String, apps: APIKeyApps,
                verify: @escaping @Sendable ([UInt8], [UInt8]) -> Bool) {
        (self.keyID, self.teamID, self.name, self.apps, self.verify) = (keyID, teamID, name, apps, verify)
    }

    public func verifies(_ signingInput: [UInt8], signature: [UInt8]) -> Bool {
        verify(signingInput, signature)
    }
}

/// A client certificate the relay accepts: its SHA-256 fingerprint (of the
/// DER certificate), who it is and the apps it may send for.
public struct ProxyCertificate: Sendable, Equatable {
    public var sha256: [UInt8]
    public var name: String
    public var apps: APIKeyApps

    public init(sha256: [UInt8], name: String, apps: APIKeyApps) {
        (self.sha256, self.name, self.apps) = (sha256, name, apps)
    }
}

/// What authenticates a proxy request besides the API keys, swapped whole
/// by a reload: the token keys and the client certificates.
public final class ProxyCredentials: Sendable {
    public let tokenKeys: [ProxyTokenKey]
    public let certificates: [ProxyCertificate]

    public static let none = ProxyCredentials(tokenKeys: [], certificates: [])

    public init(tokenKeys: [ProxyTokenKey], certificates: [ProxyCertificate]) {
        (self.tokenKeys, self.certificates) = (tokenKeys, certificates)
    }

    /// A verifier of these token keys, for one thread (its cache is not shared).
    public func makeVerifier() -> ProviderTokenVerifier<ProxyTokenKey> {
        ProviderTokenVerifier(keys: tokenKeys)
    }
}

/// Who sent a proxy request, in APNs' order: a client certificate the relay
/// knows rules the request, its `authorization` ignored (Apple: with a
/// certificate "this request header is ignored"); else the `authorization`
/// field: one of the relay's API keys as the bearer (or Basic, as on every
/// route), else a provider token of one of `verifier`'s keys. APNs' 403
/// reasons: no `authorization` MissingProviderToken; a token that does not
/// parse, is not ES256, names an unknown `kid`, an `iss` not the key's
/// team, or whose signature does not verify InvalidProviderToken; one
/// older than an hour ExpiredProviderToken.
///
/// An API without keys (`keyring` empty, only on loopback) stays open as on
/// every route: a request without `authorization`, or with one that is not
/// a JWT, may send for every app; a provider token is still checked, so a
/// client of an APNs library reads APNs' answers.
public func authorizeProxyRequest(authorization: String?, clientCertificateSHA256: [UInt8]?,
                                  keyring: APIKeyring, credentials: ProxyCredentials,
                                  verifier: ProviderTokenVerifier<ProxyTokenKey>,
                                  now: Int) -> Result<APIAuthorization, APNsProxyRefusal> {
    if let fingerprint = clientCertificateSHA256,
       let certificate = credentials.certificates.first(where: { $0.sha256 == fingerprint }) {
        return .success(.key(name: certificate.name, apps: certificate.apps))
    }
    let open = APIAuthorization.key(name: "-", apps: .all)
    guard let authorization, authorization.utf8.contains(where: { $0 != 0x20 && $0 != 0x09 }) else {
        return keyring.isEmpty ? .success(open) : .failure(APNsProxyRefusal(.missingProviderToken))
    }
    let byKey = keyring.authorize(authorization: authorization)
    if case .key = byKey { return .success(byKey) }
    if keyring.isEmpty && ProviderToken(authorization: authorization) == nil { return .success(open) }
    switch verifier.verify(authorization: authorization, now: now) {
    case .success(let verified): return .success(.key(name: verified.key.name, apps: verified.key.apps))
    case .failure(let refusal): return .failure(APNsProxyRefusal(refusal.reason))
    }
}
