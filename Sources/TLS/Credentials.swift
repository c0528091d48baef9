import Glibc

/// Why a certificate, key or PKCS#12 file cannot be used. Each description is
/// one line, fit for the daemon's fail-fast startup message (DESIGN §4).
public enum CredentialError: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadableFile(path: String, reason: String)
    case notPKCS12(String)
    case wrongPassword
    case corruptPKCS12(String)
    case legacyProviderUnavailable
    case unsupportedAlgorithm(String)
    case noPrivateKey
    case noCertificate
    case keyMismatch
    case expired(notAfter: Int)
    case notYetValid(notBefore: Int)
    case invalidPEM(what: String, reason: String)
    case unsupportedKey(String)
    case signingFailed(String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .notPKCS12(let reason):
            return "not a PKCS#12 (.p12) file: \(reason)"
        case .wrongPassword:
            return "wrong password for the PKCS#12 file"
        case .corruptPKCS12(let reason):
            return "PKCS#12 file is damaged or unreadable: \(reason)"
        case .legacyProviderUnavailable:
            return "PKCS#12 file uses legacy encryption (RC2/3DES, as the macOS Keychain exports) and OpenSSL's legacy provider could not be loaded: install it (ossl-modules/legacy.so) or re-export the file with `openssl pkcs12 -export` (AES)"
        case .unsupportedAlgorithm(let reason):
            return "PKCS#12 file uses an algorithm OpenSSL does not support: \(reason)"
        case .noPrivateKey:
            return "no private key found (a PKCS#12 or PEM file holding only a certificate?)"
        case .noCertificate:
            return "no certificate found"
        case .keyMismatch:
            return "the private key does not belong to the certificate"
        case .expired(let notAfter):
            return "certificate expired on \(CredentialError.iso8601(notAfter))"
        case .notYetValid(let notBefore):
            return "certificate is not valid before \(CredentialError.iso8601(notBefore))"
        case .invalidPEM(let what, let reason):
            return "invalid PEM \(what): \(reason)"
        case .unsupportedKey(let reason):
            return "unsupported key: \(reason)"
        case .signingFailed(let reason):
            return "signing failed: \(reason)"
        }
    }

    /// `2021-01-01T00:00:00Z` for unix seconds, without Foundation.
    static func iso8601(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var fields = tm()
        guard gmtime_r(&time, &fields) != nil else { return "\(seconds) (unix time)" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(fields.tm_year + 1900)-\(two(fields.tm_mon + 1))-\(two(fields.tm_mday))T"
            + "\(two(fields.tm_hour)):\(two(fields.tm_min)):\(two(fields.tm_sec))Z"
    }
}

/// Reading credential files with an errno-precise error.
public enum CredentialFile {
    /// Credential files are a few KiB; anything this large is not one.
    public static let maximumSize = 1 << 20

    public static func read(_ path: String) throws(CredentialError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
            }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= maximumSize else {
                throw .unreadableFile(path: path, reason: "larger than \(maximumSize) bytes, not a credential file")
            }
        }
    }
}

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
