// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: reading PEM text.
import COpenSSL

/// PEM certificates and keys read from memory (a BIO over the bytes), with
/// "nothing of the kind in the file" told apart from "damaged".
enum PEMReader {
    /// Never prompts: an encrypted PEM key fails instead of reading a
    /// password from the terminal (OpenSSL's default callback would).
    private static let noPassword: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in 0 }

    private static func withMemoryBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) -> T) -> T? {
        bytes.withUnsafeBytes { raw -> T? in
            guard let base = raw.baseAddress, let bio = BIO_new_mem_buf(base, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    private static func isNoStartLine(_ error: OpenSSLErrorQueue.Entry) -> Bool {
        error.library == ERR_LIB_PEM && error.reason == PEM_R_NO_START_LINE
    }

    /// OpenSSL 3's decoders answer "unsupported" when the PEM holds no block
    /// they can read as a key (a certificate, say): no key in the file.
    private static func isNoKeyFound(_ error: OpenSSLErrorQueue.Entry) -> Bool {
        isNoStartLine(error) || (error.library == ERR_LIB_OSSL_DECODER && error.reason == shim_ERR_R_UNSUPPORTED())
    }

    /// A PEM certificate file (the leaf first, then any chain certificates)
    /// and a PEM private key file, as one identity.
    static func readIdentity(certificate certificateBytes: [UInt8], privateKey keyBytes: [UInt8]) throws(CredentialError) -> X509Identity {
        ERR_clear_error()
        var leaf: OpaquePointer? = nil
        let chain = shim_sk_X509_new_null()
        var failure: CredentialError? = nil
        _ = withMemoryBIO(certificateBytes) { bio in
            while true {
                guard let certificate = PEM_read_bio_X509(bio, nil, noPassword, nil) else {
                    let errors = OpenSSLErrorQueue.takeAll()
                    if leaf == nil {
                        failure = errors.allSatisfy(isNoStartLine)
                            ? .noCertificate
                            : .invalidPEM(what: "certificate", reason: OpenSSLErrorQueue.line(errors, fallback: "unreadable"))
                    } else if !errors.allSatisfy(isNoStartLine) {
                        failure = .invalidPEM(what: "certificate chain", reason: OpenSSLErrorQueue.line(errors, fallback: "unreadable"))
                    }
                    return
                }
                if leaf == nil {
                    leaf = certificate
                } else if let chain, shim_sk_X509_push(chain, certificate) > 0 {
                    continue
                } else {
                    X509_free(certificate)
                }
            }
        }
        if leaf == nil && failure == nil { failure = .noCertificate }  // empty input
        var key: OpaquePointer? = nil
        if failure == nil {
            do throws(CredentialError) {
                key = try readPrivateKey(keyBytes)
            } catch {
                failure = error
            }
        }
        if let failure {
            if let leaf { X509_free(leaf) }
            if let key { EVP_PKEY_free(key) }
            if let chain { shim_sk_X509_pop_free(chain) }
            throw failure
        }
        return try X509Identity.assemble(certificate: leaf, key: key, chain: chain)
    }

    /// A PEM private key (PKCS#8 or traditional, unencrypted), an EVP_PKEY*
    /// the caller owns.
    static func readPrivateKey(_ pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        let read = withMemoryBIO(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, noPassword, nil) } ?? nil
        guard let key = read else {
            let errors = OpenSSLErrorQueue.takeAll()
            if errors.allSatisfy(isNoKeyFound) { throw .noPrivateKey }
            throw .invalidPEM(what: "private key", reason: OpenSSLErrorQueue.line(errors, fallback: "unreadable"))
        }
        return key
    }

    /// A PEM public key (`BEGIN PUBLIC KEY`, SubjectPublicKeyInfo), an
    /// EVP_PKEY* the caller owns.
    static func readPublicKey(_ pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        let read = withMemoryBIO(pem) { bio in PEM_read_bio_PUBKEY(bio, nil, noPassword, nil) } ?? nil
        guard let key = read else {
            throw .invalidPEM(what: "public key", reason: OpenSSLErrorQueue.takeLine(fallback: "no PUBLIC KEY block"))
        }
        return key
    }
}
