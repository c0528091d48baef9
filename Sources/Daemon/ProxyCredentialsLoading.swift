import APNs
import APNsCore
import ProviderAPI
import RelayCore

/// What `/3/device/` authenticates with besides the API keys, from the
/// credentials the relay holds (WIRE.md §4.4): each `.p8` token key, whose
/// provider tokens a backend with the same key file signs, for the apps of
/// its team (the apps whose token credential has that team); and each app
/// certificate, which a backend holding the same certificate presents as
/// its TLS client certificate, for the apps it sends for.
func proxyCredentials(apps: [RelayApp], credentials: [CredentialID: LoadedCredential]) -> ProxyCredentials {
    var teamApps: [String: [String]] = [:]
    var tokenProviders: [String: APNsTokenProvider] = [:]
    var certificateApps: [[UInt8]: [String]] = [:]
    for app in apps {
        for id in [app.production, app.development].compactMap({ $0 }) {
            switch credentials[id]?.authentication {
            case .token(let provider)?:
                if !(teamApps[provider.teamID]?.contains(app.id) ?? false) { teamApps[provider.teamID, default: []].append(app.id) }
                tokenProviders[provider.keyID] = tokenProviders[provider.keyID] ?? provider
            case .certificate(let identity)?:
                let fingerprint = identity.sha256Fingerprint
                if !fingerprint.isEmpty, !(certificateApps[fingerprint]?.contains(app.id) ?? false) {
                    certificateApps[fingerprint, default: []].append(app.id)
                }
            case nil:
                break
            }
        }
    }
    let tokenKeys = tokenProviders.values.sorted { $0.keyID < $1.keyID }.map { provider in
        ProxyTokenKey(keyID: provider.keyID, teamID: provider.teamID, name: "token \(provider.keyID)",
                      apps: .only(teamApps[provider.teamID] ?? [])) { provider.verifies($0, signature: $1) }
    }
    let certificates = certificateApps.sorted { $0.value.first ?? "" < $1.value.first ?? "" }.map { fingerprint, ids in
        ProxyCertificate(sha256: fingerprint, name: "certificate of \(ids.joined(separator: ","))", apps: .only(ids))
    }
    return ProxyCredentials(tokenKeys: tokenKeys, certificates: certificates)
}
