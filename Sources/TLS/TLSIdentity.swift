/// A certificate, its private key and its chain: the client identity for
/// APNs certificate auth, or a server identity. Immutable once made;
/// OpenSSL's X509/EVP_PKEY are reference counted and safe to share for
/// reading across threads, hence Sendable.
public final class TLSIdentity: @unchecked Sendable {
    let certificate: OpaquePointer  // X509*
    let key: OpaquePointer  // EVP_PKEY*
    let chain: OpaquePointer  // STACK_OF(X509)*, possibly empty

    /// The subject's UID: Apple puts the app's bundle id (the APNs topic) there.
    public let subjectUID: String?
    public let subjectCommonName: String?
    /// Validity period, unix seconds.
    public let notBefore: Int
    public let notAfter: Int
    /// Number of chain (CA) certificates carried along with the leaf.
    public let chainLength: Int

    private init(_ identity: OpenSSL.Identity) throws(CredentialError) {
        guard let validity = OpenSSL.validity(identity.certificate) else {
            OpenSSL.freeCertificate(identity.certificate)
            OpenSSL.freeKey(identity.key)
            OpenSSL.freeChain(identity.chain)
            throw .invalidPEM(what: "certificate", reason: "unreadable validity dates")
        }
        certificate = identity.certificate
        key = identity.key
        chain = identity.chain
        subjectUID = OpenSSL.subjectUID(identity.certificate)
        subjectCommonName = OpenSSL.subjectCommonName(identity.certificate)
        chainLength = OpenSSL.chainCount(identity.chain)
        notBefore = validity.notBefore
        notAfter = validity.notAfter
    }

    deinit {
        OpenSSL.freeCertificate(certificate)
        OpenSSL.freeKey(key)
        OpenSSL.freeChain(chain)
    }

    /// A PKCS#12 (.p12) file's identity. An empty password matches files
    /// exported with no password as well as with an empty one.
    public static func pkcs12(_ data: [UInt8], password: String) throws(CredentialError) -> TLSIdentity {
        try pkcs12(data, password: password, legacyAvailable: OpenSSL.providers.legacyLoaded)
    }

    static func pkcs12(_ data: [UInt8], password: String, legacyAvailable: Bool) throws(CredentialError) -> TLSIdentity {
        try TLSIdentity(OpenSSL.parsePKCS12(data, password: password, legacyAvailable: legacyAvailable))
    }

    public static func pkcs12(file path: String, password: String) throws(CredentialError) -> TLSIdentity {
        try pkcs12(CredentialFile.read(path), password: password)
    }

    /// A PEM certificate (leaf first, then any chain certificates) and a PEM
    /// private key (PKCS#8 or traditional, unencrypted).
    public static func pem(certificate: [UInt8], privateKey: [UInt8]) throws(CredentialError) -> TLSIdentity {
        try TLSIdentity(OpenSSL.parsePEMIdentity(certificate: certificate, privateKey: privateKey))
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
