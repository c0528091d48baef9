// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: RS256 signatures.
import COpenSSL

/// RS256 signing and verifying (RFC 7518 §3.3: RSASSA-PKCS1-v1_5 with
/// SHA-256, RFC 8017 §8.2) with an RSAKey. PKCS#1 v1.5 is an RSA key's
/// default padding for EVP_DigestSign, and JWS carries the signature as
/// OpenSSL writes it: big-endian, as long as the modulus.
enum RS256Signature {
    static func sign(key: OpaquePointer, message: [UInt8]) throws(CredentialError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw .signingFailed(OpenSSLErrorQueue.takeLine(fallback: "cannot initialise RSA signing"))
        }
        var signature = [UInt8](repeating: 0, count: RSAKey.signatureLength(key))
        var length = signature.count
        let signed = message.withUnsafeBufferPointer { input in
            EVP_DigestSign(context, &signature, &length, input.baseAddress, input.count)
        }
        guard signed == 1, length == signature.count else {
            throw .signingFailed(OpenSSLErrorQueue.takeLine(fallback: "RSA signing failed"))
        }
        return signature
    }

    static func verify(key: OpaquePointer, message: [UInt8], signature: [UInt8]) -> Bool {
        // A signature is exactly as long as the modulus (RFC 8017 §8.2.2 step 1).
        guard signature.count == RSAKey.signatureLength(key) else { return false }
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return message.withUnsafeBufferPointer { input in
            EVP_DigestVerify(context, signature, signature.count, input.baseAddress, input.count)
        } == 1
    }
}
