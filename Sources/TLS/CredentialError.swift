/// Why a certificate, key or PKCS#12 file cannot be used. Each description is
/// one line, fit for the daemon's fail-fast startup message (ARCHITECTURE.md §7).
public enum CredentialError: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadableFile(path: String, reason: String)
    case notPKCS12(String)
    case wrongPassword
    case corruptPKCS12(String)
    case legacyProviderUnavailable
    case unsupportedAlgorithm(String)
    case noPrivateKey
    case noCertificate
    case keyMismatch
    case expired(notAfter: Int)
    case notYetValid(notBefore: Int)
    case invalidPEM(what: String, reason: String)
    case unsupportedKey(String)
    /// Raw public key bytes that are not a point on P-256 (a VAPID `k`).
    case invalidPublicKey(String)
    case signingFailed(String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .notPKCS12(let reason):
            return "not a PKCS#12 (.p12) file: \(reason)"
        case .wrongPassword:
            return "wrong password for the PKCS#12 file"
        case .corruptPKCS12(let reason):
            return "PKCS#12 file is damaged or unreadable: \(reason)"
        case .legacyProviderUnavailable:
            return "PKCS#12 file uses legacy encryption (RC2/3DES, as the macOS Keychain exports) and OpenSSL's legacy provider could not be loaded: install it (ossl-modules/legacy.so) or re-export the file with `openssl pkcs12 -export` (AES)"
        case .unsupportedAlgorithm(let reason):
            return "PKCS#12 file uses an algorithm OpenSSL does not support: \(reason)"
        case .noPrivateKey:
            return "no private key found (a PKCS#12 or PEM file holding only a certificate?)"
        case .noCertificate:
            return "no certificate found"
        case .keyMismatch:
            return "the private key does not belong to the certificate"
        case .expired(let notAfter):
            return "certificate expired on \(certificateDateText(notAfter))"
        case .notYetValid(let notBefore):
            return "certificate is not valid before \(certificateDateText(notBefore))"
        case .invalidPEM(let what, let reason):
            return "invalid PEM \(what): \(reason)"
        case .unsupportedKey(let reason):
            return "unsupported key: \(reason)"
        case .invalidPublicKey(let reason):
            return "invalid P-256 public key: \(reason)"
        case .signingFailed(let reason):
            return "signing failed: \(reason)"
        }
    }
}
