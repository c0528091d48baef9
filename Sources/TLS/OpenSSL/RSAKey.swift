// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: RSA keys (EVP_PKEY).
import COpenSSL

/// RSA keys for RS256 (RFC 7518 §3.3), read from PEM: a private key as
/// PKCS#8 (`BEGIN PRIVATE KEY`, what a Firebase service account's file
/// holds) or PKCS#1 (`BEGIN RSA PRIVATE KEY`), a public key as
/// SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`). Any other key type, or an RSA
/// key under 2048 bits, is refused. Each key read is an EVP_PKEY* its
/// caller owns and gives back to `free`.
enum RSAKey {
    /// RFC 7518 §3.3: "A key of size 2048 bits or larger MUST be used".
    static let minimumBits: Int32 = 2048

    static func readPrivate(pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        return try requireRSA(PEMReader.readPrivateKey(pem))
    }

    static func readPublic(pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        return try requireRSA(PEMReader.readPublicKey(pem))
    }

    static func free(_ key: OpaquePointer) { EVP_PKEY_free(key) }

    /// The size of the key's signatures in bytes (its modulus's).
    static func signatureLength(_ key: OpaquePointer) -> Int { Int(EVP_PKEY_get_size(key)) }

    /// Returns `key` if it is an RSA key of at least `minimumBits`, else
    /// frees it and throws.
    private static func requireRSA(_ key: OpaquePointer) throws(CredentialError) -> OpaquePointer {
        guard EVP_PKEY_is_a(key, "RSA") == 1 else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            EVP_PKEY_free(key)
            throw .unsupportedKey("RS256 needs an RSA key, this is \(type)")
        }
        let bits = EVP_PKEY_get_bits(key)
        guard bits >= minimumBits else {
            EVP_PKEY_free(key)
            throw .unsupportedKey("RS256 needs an RSA key of at least \(minimumBits) bits (RFC 7518 §3.3), this one has \(bits)")
        }
        return key
    }
}
