// Swift owners of OpenSSL keys: each holds its EVP_PKEY as an opaque pointer
// and frees it in deinit; only the files in Sources/TLS/OpenSSL/ call OpenSSL
// or touch its pointers (ARCHITECTURE.md §3).

/// ES256 (ECDSA P-256 with SHA-256, RFC 7518 §3.4) for APNs provider tokens:
/// signs with the team's AuthKey_XXXX.p8. Signing makes a fresh digest
/// context per call and the key is only read, so one signer can be shared.
public final class ES256Signer: @unchecked Sendable {
    private let key: OpaquePointer  // EVP_PKEY*, owned

    /// `pkcs8PEM`: the contents of an AuthKey_XXXX.p8 (`BEGIN PRIVATE KEY`).
    /// Keys other than EC P-256 are refused.
    public init(pkcs8PEM: [UInt8]) throws(CredentialError) {
        key = try P256Key.readPrivate(pem: pkcs8PEM)
    }

    public convenience init(pkcs8File path: String) throws(CredentialError) {
        try self.init(pkcs8PEM: CredentialFile.read(path))
    }

    deinit { P256Key.free(key) }

    /// The JWS signature of `message`: r‖s, each left-padded to 32 bytes
    /// (64 bytes in all), not DER (RFC 7518 §3.4).
    public func sign(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        try ES256Signature.sign(key: key, message: message)
    }

    /// True when `signature` is this key's 64-byte r‖s ES256 signature of
    /// `message`: the relay checks a backend's provider token signed with
    /// the same .p8 it holds.
    public func verify(_ message: [UInt8], signature: [UInt8]) -> Bool {
        ES256Signature.verify(key: key, message: message, signature: signature)
    }
}

/// Checks ES256 signatures: the APNs emulator checks provider tokens with
/// it, the relay a VAPID JWT (RFC 8292 §2) with the key its `k` carries.
/// Whichever way the key came in, verifying is the same code.
public final class ES256Verifier: @unchecked Sendable {
    private let key: OpaquePointer  // EVP_PKEY*, owned

    /// `publicKeyPEM`: a `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo) P-256 key.
    public init(publicKeyPEM: [UInt8]) throws(CredentialError) {
        key = try P256Key.readPublic(pem: publicKeyPEM)
    }

    /// `uncompressedPublicKey`: the 65-byte point 0x04‖x‖y, as VAPID's `k`
    /// carries it (RFC 8292 §3.2). Anything else (another length, a
    /// compressed point, a point off P-256 or at infinity) is refused with
    /// `CredentialError.invalidPublicKey`.
    public init(uncompressedPublicKey: [UInt8]) throws(CredentialError) {
        key = try P256Key.readPublic(uncompressedPoint: uncompressedPublicKey)
    }

    deinit { P256Key.free(key) }

    /// True when `signature` is a valid 64-byte r‖s ES256 signature of `message`.
    public func verify(_ message: [UInt8], signature: [UInt8]) -> Bool {
        ES256Signature.verify(key: key, message: message, signature: signature)
    }
}
