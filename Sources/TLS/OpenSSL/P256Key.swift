// The OpenSSL edge (ARCHITECTURE.md §5.2): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: EC P-256 keys (EVP_PKEY).
import COpenSSL

/// EC P-256 keys for ES256 (RFC 7518 §3.4), read from PEM; any other key
/// type or curve is refused. Each key read is an EVP_PKEY* its caller owns
/// and gives back to `free`.
enum P256Key {
    static func readPrivate(pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        return try requireP256(PEMReader.readPrivateKey(pem))
    }

    static func readPublic(pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        return try requireP256(PEMReader.readPublicKey(pem))
    }

    static func free(_ key: OpaquePointer) { EVP_PKEY_free(key) }

    /// Returns `key` if it is an EC key on P-256, else frees it and throws.
    private static func requireP256(_ key: OpaquePointer) throws(CredentialError) -> OpaquePointer {
        guard EVP_PKEY_is_a(key, "EC") == 1 else {
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            EVP_PKEY_free(key)
            throw .unsupportedKey("ES256 needs an EC P-256 key, this is \(type)")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        let named = EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
        let group = named ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unnamed curve"
        guard group == "prime256v1" || group == "P-256" else {
            EVP_PKEY_free(key)
            ERR_clear_error()
            throw .unsupportedKey("ES256 needs an EC P-256 key, this one is on \(group)")
        }
        return key
    }
}
