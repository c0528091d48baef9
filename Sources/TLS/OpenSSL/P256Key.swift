// The OpenSSL edge (ARCHITECTURE.md §5.2): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: EC P-256 keys (EVP_PKEY).
import COpenSSL

/// EC P-256 keys for ES256 (RFC 7518 §3.4), read from PEM or from a raw
/// public point; any other key type or curve is refused. Each key read is an
/// EVP_PKEY* its caller owns and gives back to `free`.
enum P256Key {
    /// An uncompressed P-256 point is 0x04‖x‖y, each coordinate 32 bytes
    /// (SEC 1 §2.3.3): what VAPID's `k` carries (RFC 8292 §3.2).
    static let uncompressedPointLength = 65
    private static let uncompressedPrefix: UInt8 = 0x04

    static func readPrivate(pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        return try requireP256(PEMReader.readPrivateKey(pem))
    }

    static func readPublic(pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        return try requireP256(PEMReader.readPublicKey(pem))
    }

    /// A public key from the uncompressed point 0x04‖x‖y. OpenSSL 3.0's
    /// import (EVP_PKEY_fromdata with the group and the octet string)
    /// decodes the point and refuses coordinates outside the field or a point
    /// off the curve; EVP_PKEY_public_check_quick then refuses the point at
    /// infinity. Its full sibling also multiplies by the group order, which
    /// on P-256 (cofactor 1) cannot fail for a point on the curve (SP
    /// 800-56A rev. 3 §5.6.2.3.4), so the quick check is the whole check.
    static func readPublic(uncompressedPoint point: [UInt8]) throws(CredentialError) -> OpaquePointer {
        guard point.count == uncompressedPointLength else {
            throw .invalidPublicKey("an uncompressed P-256 point is \(uncompressedPointLength) bytes, this is \(point.count)")
        }
        guard point[0] == uncompressedPrefix else {
            let kind = point[0] == 0x02 || point[0] == 0x03 ? "compressed" : "unknown"
            throw .invalidPublicKey("the point does not start with 0x04 (uncompressed) but with 0x\(String(point[0], radix: 16)) (\(kind))")
        }
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw .invalidPublicKey(OpenSSLErrorQueue.takeLine(fallback: "OpenSSL has no EC key type"))
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else {
            throw .invalidPublicKey(OpenSSLErrorQueue.takeLine(fallback: "cannot start an EC key import"))
        }
        // An OSSL_PARAM keeps pointers to its key name and value, so every
        // one of them must outlive the EVP_PKEY_fromdata call: no Swift
        // string-to-pointer temporaries. The names are
        // OSSL_PKEY_PARAM_GROUP_NAME and OSSL_PKEY_PARAM_PUB_KEY.
        var group = Array("prime256v1".utf8CString)
        var octets = point
        var key: OpaquePointer? = nil
        let imported = "group".withCString { groupName in
            "pub".withCString { publicKeyName in
                group.withUnsafeMutableBufferPointer { name in
                    octets.withUnsafeMutableBytes { bytes in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(groupName, name.baseAddress, 0),
                            OSSL_PARAM_construct_octet_string(publicKeyName, bytes.baseAddress, bytes.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_PKEY_fromdata(context, &key, shim_EVP_PKEY_PUBLIC_KEY(), &parameters)
                    }
                }
            }
        }
        guard imported == 1, let key else {
            throw .invalidPublicKey("the point is not on P-256 (\(OpenSSLErrorQueue.takeLine(fallback: "refused by OpenSSL")))")
        }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            EVP_PKEY_free(key)
            throw .invalidPublicKey(OpenSSLErrorQueue.takeLine(fallback: "out of memory"))
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check_quick(check) == 1 else {
            EVP_PKEY_free(key)
            throw .invalidPublicKey("the point is not a valid P-256 public key (\(OpenSSLErrorQueue.takeLine(fallback: "refused by OpenSSL")))")
        }
        return key
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
