// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: a certificate, its key and its chain.
import COpenSSL

/// A certificate (X509*), its private key (EVP_PKEY*) and its chain
/// (STACK_OF(X509)*, possibly empty), as PKCS#12 and PEM parsing hand them
/// over. A plain value: its holder owns the three objects and frees them
/// once, with `free()` (TLSIdentity does, in deinit).
struct X509Identity {
    let certificate: OpaquePointer
    let key: OpaquePointer
    let chain: OpaquePointer

    func free() {
        X509_free(certificate)
        EVP_PKEY_free(key)
        shim_sk_X509_pop_free(chain)
    }

    /// Takes ownership of the three (possibly nil) objects: either returns them
    /// as an identity or frees them and throws.
    static func assemble(certificate: OpaquePointer?, key: OpaquePointer?, chain: OpaquePointer?) throws(CredentialError) -> X509Identity {
        func release() {
            if let certificate { X509_free(certificate) }
            if let key { EVP_PKEY_free(key) }
            if let chain { shim_sk_X509_pop_free(chain) }
        }
        guard let key else { release(); throw .noPrivateKey }
        guard let certificate else { release(); throw .noCertificate }
        guard keyMatches(certificate, key) else { release(); throw .keyMismatch }
        guard let chain = chain ?? shim_sk_X509_new_null() else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw .corruptPKCS12("out of memory")
        }
        return X509Identity(certificate: certificate, key: key, chain: chain)
    }

    /// Checks the key belongs to the certificate; on failure frees nothing.
    private static func keyMatches(_ certificate: OpaquePointer, _ key: OpaquePointer) -> Bool {
        let matches = X509_check_private_key(certificate, key) == 1
        ERR_clear_error()
        return matches
    }
}
