// Swift owners of OpenSSL keys: each holds its EVP_PKEY as an opaque pointer
// and frees it in deinit; only the files in Sources/TLS/OpenSSL/ call OpenSSL
// or touch its pointers (ARCHITECTURE.md §3).

/// RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3) for the access
/// token requests of FCM: signs a service account's JWT assertion with its
/// private key. Signing makes a fresh digest context per call and the key is
/// only read, so one signer can be shared. No error or description shows
/// the key.
public final class RS256Signer: @unchecked Sendable {
    private let key: OpaquePointer  // EVP_PKEY*, owned

    /// `pem`: a `BEGIN PRIVATE KEY` (PKCS#8, as a service account's file
    /// holds it) or `BEGIN RSA PRIVATE KEY` (PKCS#1) RSA key of at least
    /// 2048 bits; anything else is refused.
    public init(privateKeyPEM pem: [UInt8]) throws(CredentialError) {
        key = try RSAKey.readPrivate(pem: pem)
    }

    deinit { RSAKey.free(key) }

    /// The signature's length in bytes: the modulus's (256 for 2048 bits).
    public var signatureLength: Int { RSAKey.signatureLength(key) }

    /// The JWS signature of `message` (RFC 7515 §5.1's signing input).
    public func sign(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        try RS256Signature.sign(key: key, message: message)
    }
}

/// Checks RS256 signatures with an RSA public key: what the FCM emulator's
/// token endpoint does with an assertion, as Google's does.
public final class RS256Verifier: @unchecked Sendable {
    private let key: OpaquePointer  // EVP_PKEY*, owned

    /// `publicKeyPEM`: a `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo) RSA key
    /// of at least 2048 bits.
    public init(publicKeyPEM: [UInt8]) throws(CredentialError) {
        key = try RSAKey.readPublic(pem: publicKeyPEM)
    }

    /// The verifier of the key pair whose private half is `privateKeyPEM`
    /// (as RS256Signer takes it): a service account's file holds only the
    /// private key, and the emulator checks its assertions with it.
    public init(privateKeyPEM: [UInt8]) throws(CredentialError) {
        key = try RSAKey.readPrivate(pem: privateKeyPEM)
    }

    deinit { RSAKey.free(key) }

    /// True when `signature` is a valid RS256 signature of `message`.
    public func verify(_ message: [UInt8], signature: [UInt8]) -> Bool {
        RS256Signature.verify(key: key, message: message, signature: signature)
    }
}
