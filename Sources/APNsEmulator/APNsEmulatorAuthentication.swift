/// How clients prove who they are.
public enum APNsEmulatorAuthentication: Sendable, Hashable {
    /// TLS client certificates signed by the CA in `caFile` are required;
    /// the allowed topic is the certificate's subject UID.
    case clientCertificate(caFile: String)
    /// `authorization: bearer <JWT>` (ES256) signed by one of these keys:
    /// header `kid` = its `keyID`, `iss` = its `teamID`, the key valid in the
    /// emulator's environment and (topic-specific keys) for the topic.
    case providerKeys([APNsEmulatorProviderKey])
    /// Both, per connection, as one APNs host serves certificate-based and
    /// token-based providers alike (one emulator per environment does both,
    /// for apps with certificates and apps with keys). A client certificate
    /// is requested, not required; one that is presented must be signed by
    /// a CA in `caFile` (else the handshake fails) and then rules the
    /// connection as in `clientCertificate`, its `authorization` headers
    /// ignored. A connection without one is held to `keys` as in `providerKeys`.
    case clientCertificateOrProviderKeys(caFile: String, keys: [APNsEmulatorProviderKey])
    /// Nothing checked (load generators such as h2load have no client certificate).
    case none

    /// What is checked, for the emulator's start-up line.
    var checks: String {
        switch self {
        case .clientCertificate: "client certificates"
        case .providerKeys(let keys): "provider tokens of \(keys.count) key(s)"
        case .clientCertificateOrProviderKeys(_, let keys):
            "client certificates, or provider tokens of \(keys.count) key(s) on connections without one"
        case .none: "no credentials"
        }
    }

    /// One team key valid in both environments for any topic.
    public static func token(publicKeyPEM: [UInt8], keyID: String, teamID: String) -> APNsEmulatorAuthentication {
        .providerKeys([APNsEmulatorProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: publicKeyPEM)])
    }
}
