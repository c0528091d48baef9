// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: ES256 signatures (ECDSA_SIG).
import COpenSSL

/// ES256 signing and verifying (RFC 7518 §3.4) with a P256Key. JWS carries
/// r‖s, each left-padded to 32 bytes, where OpenSSL speaks DER: the
/// conversion both ways is here.
enum ES256Signature {
    static let componentLength = 32

    static func sign(key: OpaquePointer, message: [UInt8]) throws(CredentialError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw .signingFailed(OpenSSLErrorQueue.takeLine(fallback: "cannot initialise ECDSA"))
        }
        var der = [UInt8](repeating: 0, count: 80)  // ECDSA P-256 DER is at most 72 bytes
        var derLength = der.count
        let signed = message.withUnsafeBufferPointer { input in
            EVP_DigestSign(context, &der, &derLength, input.baseAddress, input.count)
        }
        guard signed == 1 else {
            throw .signingFailed(OpenSSLErrorQueue.takeLine(fallback: "ECDSA signing failed"))
        }
        // JWS wants r‖s, each left-padded to 32 bytes, not DER.
        let decoded: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, derLength)
        }
        guard let signature = decoded else {
            throw .signingFailed(OpenSSLErrorQueue.takeLine(fallback: "cannot decode the DER signature"))
        }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 2 * componentLength)
        let written = raw.withUnsafeMutableBufferPointer { out -> Bool in
            guard let base = out.baseAddress, let r, let s else { return false }
            return BN_bn2binpad(r, base, Int32(componentLength)) == componentLength
                && BN_bn2binpad(s, base + componentLength, Int32(componentLength)) == componentLength
        }
        guard written else { throw .signingFailed("signature component larger than 32 bytes") }
        return raw
    }

    static func verify(key: OpaquePointer, message: [UInt8], signature raw: [UInt8]) -> Bool {
        guard raw.count == 2 * componentLength else { return false }
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard let signature = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(signature) }
        let components = raw.withUnsafeBufferPointer { buffer -> (OpaquePointer?, OpaquePointer?) in
            (BN_bin2bn(buffer.baseAddress, Int32(componentLength), nil),
             BN_bin2bn(buffer.baseAddress.map { $0 + componentLength }, Int32(componentLength), nil))
        }
        guard let r = components.0, let s = components.1 else {
            if let r = components.0 { BN_free(r) }
            if let s = components.1 { BN_free(s) }
            return false
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {  // takes ownership of r and s on success
            BN_free(r)
            BN_free(s)
            return false
        }
        let derLength = i2d_ECDSA_SIG(signature, nil)
        guard derLength > 0 else { return false }
        var der = [UInt8](repeating: 0, count: Int(derLength))
        let encoded = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard encoded == derLength, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return message.withUnsafeBufferPointer { input in
            EVP_DigestVerify(context, der, der.count, input.baseAddress, input.count)
        } == 1
    }
}
