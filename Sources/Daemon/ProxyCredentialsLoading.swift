import APNs
import APNsCore
import ProviderAPI
import RelayCore
import TLS

/// What `/3/device/` authenticates with besides the API keys, from the
/// credentials the relay holds (WIRE.md §4.4): each `.p8` token key, whose
/// provider tokens a backend with the same key file signs, for the apps of
/// its team (the apps whose token credential has that team); and each app
/// certificate, which a backend holding the same certificate presents as
/// its TLS client certificate, for the apps it sends for. Then each
/// `[[api-key]]` entry's `jwt-public-key` (read and checked here, so a bad
/// file stops the start or the reload) and `client-certificate-sha256`, for
/// that entry's apps. A `jwt-key-id` that is also one of the relay's keys
/// is refused: a token must name one set of apps.
func proxyCredentials(apps: [RelayApp], credentials: [CredentialID: LoadedCredential],
                      apiKeys: [APIKeyEntry]) throws(AppsLoadError) -> ProxyCredentials {
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
    var tokenKeys = tokenProviders.values.sorted { $0.keyID < $1.keyID }.map { provider in
        ProxyTokenKey(keyID: provider.keyID, teamID: provider.teamID, name: "token \(provider.keyID)",
                      apps: .only(teamApps[provider.teamID] ?? [])) { provider.verifies($0, signature: $1) }
    }
    var certificates = certificateApps.sorted { $0.value.first ?? "" < $1.value.first ?? "" }.map { fingerprint, ids in
        ProxyCertificate(sha256: fingerprint, name: "certificate of \(ids.joined(separator: ","))", apps: .only(ids))
    }
    for entry in apiKeys {
        if let key = entry.providerKey {
            guard tokenProviders[key.keyID] == nil else {
                throw AppsLoadError("api-key \"\(entry.name)\": jwt-key-id \(key.keyID) is the key id of an app's "
                    + "p8 key too; a provider token must name one key")
            }
            let verifier: ES256Verifier
            do { verifier = try ES256Verifier(publicKeyPEM: try CredentialFile.read(key.publicKeyFile)) } catch {
                throw AppsLoadError("api-key \"\(entry.name)\": jwt-public-key (\(key.publicKeyFile)): \(error)")
            }
            tokenKeys.append(ProxyTokenKey(keyID: key.keyID, teamID: key.teamID, name: entry.name, apps: entry.apps) {
                verifier.verify($0, signature: $1)
            })
        }
        if let fingerprint = entry.clientCertificateSHA256 {
            // The entry's certificate comes first: it names its own apps.
            certificates.insert(ProxyCertificate(sha256: fingerprint, name: entry.name, apps: entry.apps), at: 0)
        }
    }
    return ProxyCredentials(tokenKeys: tokenKeys, certificates: certificates)
}
