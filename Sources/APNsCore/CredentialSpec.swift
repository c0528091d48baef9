/// Where one APNs credential comes from, before it is loaded (ARCHITECTURE.md
/// §7): the environment variables describe one (`Configuration.credentialSpec`),
/// each app of the apps file one per environment. The names follow
/// the apps file's keys. Holds secrets (passwords, key text): never log one;
/// `source` is the log-safe part.
public enum CredentialSpec: Sendable, Hashable {
    /// `p12-file` / `P12_FILENAME`: a PKCS#12 file with certificate and key.
    case p12File(path: String, password: String)
    /// `p12-base64` / `P12_BASE64`: the same PKCS#12, base64 text.
    case p12Base64(String, password: String)
    /// `p8-file` / `TOKEN_AUTH_KEY_FILENAME`: an APNs auth key (.p8, PEM).
    case p8File(path: String, keyID: String, teamID: String)
    /// `p8`: the same key's PEM text.
    case p8(pem: String, keyID: String, teamID: String)

    /// Where the credential is read from, without any secret:
    /// "p12-file /etc/toot-relay/toot.p12", "p12-base64", "p8-file /etc/…", "p8".
    public var source: String {
        switch self {
        case .p12File(let path, _): "p12-file \(path)"
        case .p12Base64: "p12-base64"
        case .p8File(let path, _, _): "p8-file \(path)"
        case .p8: "p8"
        }
    }
}
