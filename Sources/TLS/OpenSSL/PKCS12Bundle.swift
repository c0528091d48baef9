// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: PKCS#12 (.p12) files.
import COpenSSL

/// A PKCS#12 (.p12) file read into an identity, with each failure told
/// apart: not a p12, wrong password, a missing legacy provider, damage.
enum PKCS12Bundle {
    /// `legacyAvailable`: whether OpenSSL's legacy provider is loaded, which
    /// decides what an unsupported algorithm means (a missing provider, or
    /// an algorithm OpenSSL cannot do at all).
    static func parse(_ bytes: [UInt8], password: String, legacyAvailable: Bool) throws(CredentialError) -> X509Identity {
        ERR_clear_error()
        let decoded: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let p12 = decoded else {
            throw .notPKCS12(OpenSSLErrorQueue.takeLine(fallback: "DER decoding failed"))
        }
        defer { PKCS12_free(p12) }

        // Check the MAC first: a mismatch means a wrong password, where
        // PKCS12_parse would only say "mac verify failure". An empty password
        // may have been encoded as no password at all or as an empty string
        // (PKCS12_parse tries both, so do we).
        var resolvedPassword: String? = password
        if PKCS12_mac_present(p12) == 1 {
            if password.isEmpty {
                if PKCS12_verify_mac(p12, nil, 0) == 1 {
                    resolvedPassword = nil
                } else if PKCS12_verify_mac(p12, "", 0) == 1 {
                    resolvedPassword = ""
                } else {
                    throw macFailure(legacyAvailable: legacyAvailable)
                }
            } else if PKCS12_verify_mac(p12, password, -1) != 1 {
                throw macFailure(legacyAvailable: legacyAvailable)
            }
        }

        var key: OpaquePointer? = nil
        var certificate: OpaquePointer? = nil
        var chain: OpaquePointer? = nil
        let parsed: Int32
        if let resolvedPassword {
            parsed = PKCS12_parse(p12, resolvedPassword, &key, &certificate, &chain)
        } else {
            parsed = PKCS12_parse(p12, nil, &key, &certificate, &chain)
        }
        guard parsed == 1 else {
            // PKCS12_parse frees its outputs on failure.
            let errors = OpenSSLErrorQueue.takeAll()
            if errors.contains(where: isUnsupportedAlgorithm) {
                throw legacyAvailable
                    ? .unsupportedAlgorithm(OpenSSLErrorQueue.line(errors, fallback: "unsupported algorithm"))
                    : .legacyProviderUnavailable
            }
            throw .corruptPKCS12(OpenSSLErrorQueue.line(errors, fallback: "cannot decrypt its contents"))
        }
        return try X509Identity.assemble(certificate: certificate, key: key, chain: chain)
    }

    private static func macFailure(legacyAvailable: Bool) -> CredentialError {
        // PKCS12_verify_mac leaves the queue empty when the MAC merely differs
        // (wrong password); anything queued means the MAC could not be computed.
        let errors = OpenSSLErrorQueue.takeAll()
        if errors.isEmpty { return .wrongPassword }
        if errors.contains(where: isUnsupportedAlgorithm) {
            return legacyAvailable
                ? .unsupportedAlgorithm(OpenSSLErrorQueue.line(errors, fallback: "unsupported MAC algorithm"))
                : .legacyProviderUnavailable
        }
        return .corruptPKCS12(OpenSSLErrorQueue.line(errors, fallback: "cannot verify its MAC"))
    }

    private static func isUnsupportedAlgorithm(_ error: OpenSSLErrorQueue.Entry) -> Bool {
        error.reason == shim_ERR_R_UNSUPPORTED()
            || (error.library == ERR_LIB_EVP
                && (error.reason == EVP_R_UNSUPPORTED_ALGORITHM || error.reason == EVP_R_UNSUPPORTED_CIPHER))
    }
}
