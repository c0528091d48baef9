// A Swift owner of OpenSSL objects: it holds them as opaque pointers and
// frees them in deinit; only the files in Sources/TLS/OpenSSL/ call OpenSSL
// or touch its pointers (ARCHITECTURE.md §3).

/// A certificate, its private key and its chain: the client identity for
/// APNs certificate auth, or a server identity. Immutable once made;
/// OpenSSL's X509/EVP_PKEY are reference counted and safe to share for
/// reading across threads, hence Sendable.
public final class TLSIdentity: @unchecked Sendable {
    /// Owned: freed in deinit.
    let objects: X509Identity

    /// The subject's UID: Apple puts the app's bundle id (the APNs topic) there.
    public let subjectUID: String?
    public let subjectCommonName: String?
    /// Validity period, unix seconds.
    public let notBefore: Int
    public let notAfter: Int
    /// SHA-256 of the certificate (DER): a client presenting this certificate
    /// is this identity.
    public let sha256Fingerprint: [UInt8]

    /// Takes ownership of `objects`, freeing them if it throws.
    init(_ objects: X509Identity) throws(CredentialError) {
        guard let validity = X509Certificate.validity(objects.certificate) else {
            objects.free()
            throw .invalidPEM(what: "certificate", reason: "unreadable validity dates")
        }
        self.objects = objects
        subjectUID = X509Certificate.subjectUID(objects.certificate)
        subjectCommonName = X509Certificate.subjectCommonName(objects.certificate)
        notBefore = validity.notBefore
        notAfter = validity.notAfter
        sha256Fingerprint = X509Certificate.sha256Fingerprint(objects.certificate) ?? []
    }

    deinit { objects.free() }

    /// A PKCS#12 (.p12) file's identity. An empty password matches files
    /// exported with no password as well as with an empty one.
    public static func pkcs12(_ data: [UInt8], password: String) throws(CredentialError) -> TLSIdentity {
        try TLSIdentity(PKCS12Bundle.parse(data, password: password, legacyAvailable: OpenSSLProviders.shared.legacyLoaded))
    }

    public static func pkcs12(file path: String, password: String) throws(CredentialError) -> TLSIdentity {
        try pkcs12(CredentialFile.read(path), password: password)
    }

    /// A PEM certificate (leaf first, then any chain certificates) and a PEM
    /// private key (PKCS#8 or traditional, unencrypted).
    public static func pem(certificate: [UInt8], privateKey: [UInt8]) throws(CredentialError) -> TLSIdentity {
        try TLSIdentity(PEMReader.readIdentity(certificate: certificate, privateKey: privateKey))
    }

    public static func pem(certificateFile: String, privateKeyFile: String) throws(CredentialError) -> TLSIdentity {
        try pem(certificate: CredentialFile.read(certificateFile), privateKey: CredentialFile.read(privateKeyFile))
    }

    /// Throws `.expired` / `.notYetValid` when `now` (unix seconds) is outside
    /// the certificate's validity. Separate from loading so the daemon decides
    /// what an expired certificate means for it.
    public func validate(now: Int) throws(CredentialError) {
        if now > notAfter { throw .expired(notAfter: notAfter) }
        if now < notBefore { throw .notYetValid(notBefore: notBefore) }
    }
}
