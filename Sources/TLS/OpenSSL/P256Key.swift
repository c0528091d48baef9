// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
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

    /// A public key from the uncompressed point 0x04‖x‖y: a fresh key with
    /// P-256's parameters copied from `P256Parameters` and the point set with
    /// EVP_PKEY_set1_encoded_public_key, whose decoding (EC_POINT_oct2point)
    /// refuses a coordinate outside the field and a point off the curve.
    /// With the length and the 0x04 checked first (the one-byte encoding of
    /// the point at infinity and OpenSSL's hybrid form never reach it), that
    /// is full public key validation on P-256: its cofactor is 1, so every
    /// point on the curve but infinity has the group's order (SP 800-56A
    /// rev. 3 §5.6.2.3.3). EVP_PKEY_public_check_quick would check the same
    /// again for about 10 µs, twice the whole import, and the relay may read
    /// a key per restricted push; EVP_PKEY_fromdata with the
    /// group's name builds the curve anew for every key (about 17 µs).
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
        guard let parameters = P256Parameters.shared.key else {
            throw .invalidPublicKey("OpenSSL cannot make P-256's parameters (\(P256Parameters.shared.failure))")
        }
        guard let key = EVP_PKEY_new() else { throw .invalidPublicKey("out of memory") }
        guard EVP_PKEY_copy_parameters(key, parameters) == 1 else {
            EVP_PKEY_free(key)
            throw .invalidPublicKey(OpenSSLErrorQueue.takeLine(fallback: "cannot copy P-256's parameters"))
        }
        let set = point.withUnsafeBufferPointer { bytes in
            EVP_PKEY_set1_encoded_public_key(key, bytes.baseAddress, bytes.count)
        }
        guard set == 1 else {
            EVP_PKEY_free(key)
            throw .invalidPublicKey("the point is not on P-256 (\(OpenSSLErrorQueue.takeLine(fallback: "refused by OpenSSL")))")
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

/// P-256's domain parameters as a key without a point (an EVP_PKEY* this
/// owner frees), built once per process when the first raw point is read
/// (`shared` is a `static let`: initialised once, thread-safely). Keys read
/// from points copy them; copying only reads this key, so threads share it.
private final class P256Parameters: @unchecked Sendable {
    static let shared = P256Parameters()

    let key: OpaquePointer?
    /// Why `key` is nil, if it is.
    let failure: String

    private init() {
        ERR_clear_error()
        var made: OpaquePointer? = nil
        if let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) {
            // An OSSL_PARAM keeps pointers to its name and value: both must
            // outlive EVP_PKEY_fromdata, so no Swift string temporaries. The
            // name is OSSL_PKEY_PARAM_GROUP_NAME.
            var group = Array("prime256v1".utf8CString)
            _ = "group".withCString { name in
                group.withUnsafeMutableBufferPointer { value in
                    var parameters = [OSSL_PARAM_construct_utf8_string(name, value.baseAddress, 0), OSSL_PARAM_construct_end()]
                    return EVP_PKEY_fromdata_init(context) == 1
                        && EVP_PKEY_fromdata(context, &made, shim_EVP_PKEY_KEY_PARAMETERS(), &parameters) == 1
                }
            }
            EVP_PKEY_CTX_free(context)
        }
        key = made
        failure = made == nil ? OpenSSLErrorQueue.takeLine(fallback: "no EC key type") : ""
    }

    deinit { if let key { EVP_PKEY_free(key) } }
}
