import TLS

/// One of the relay's own certificates (`CRT_FILENAME`, `KEY_FILENAME`
/// for the Web Push port; `API_CRT_FILENAME`, `API_KEY_FILENAME` for the
/// API's) as a server TLS context, loaded at start and again on SIGHUP:
/// certbot renews the files in place, and new connections then handshake
/// with the renewed certificate while those already open keep theirs.
struct ServerCertificate {
    let certificateFile: String
    let keyFile: String
    /// The ALPN protocols offered, in order of preference.
    let alpn: [String]
    /// CAs a client certificate must be issued by (asked for, not
    /// required); read again with the certificate.
    let clientCAFile: String?
    /// The context new connections handshake with.
    private(set) var context: TLSContext
    /// The certificate's end of validity, unix seconds.
    private(set) var notAfter: Int
    /// The files' bytes the context was made from: a reload that reads the
    /// same bytes changes nothing.
    private var loaded: (certificate: [UInt8], key: [UInt8])

    /// What a reload did.
    enum Reload: Equatable {
        /// The files hold what is already served.
        case unchanged
        /// New connections get the certificate the files hold now.
        case replaced
        /// The files do not load (unreadable, malformed, a key that is
        /// not the certificate's, expired): the running certificate stays.
        case failed(String)
    }

    /// Loads both files; throws why they do not load (the files' text
    /// never appears in it).
    init(certificateFile: String, keyFile: String, alpn: [String] = ["http/1.1"],
         clientCAFile: String? = nil) throws(ServerCertificateError) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.alpn = alpn
        self.clientCAFile = clientCAFile
        let bytes = try Self.read(certificateFile: certificateFile, keyFile: keyFile)
        (context, notAfter) = try Self.makeContext(bytes, alpn: alpn, clientCAFile: clientCAFile)
        loaded = bytes
    }

    /// Reads the files again and, when they changed and load, serves them
    /// from now on. `now`: unix seconds; a certificate expired by then is
    /// refused, since the running one can only be better.
    mutating func reload(now: Int) -> Reload {
        let bytes: (certificate: [UInt8], key: [UInt8])
        do { bytes = try Self.read(certificateFile: certificateFile, keyFile: keyFile) } catch {
            return .failed(error.description)
        }
        guard bytes.certificate != loaded.certificate || bytes.key != loaded.key else { return .unchanged }
        let made: (TLSContext, Int)
        do { made = try Self.makeContext(bytes, alpn: alpn, clientCAFile: clientCAFile, now: now) } catch { return .failed(error.description) }
        (context, notAfter) = made
        loaded = bytes
        return .replaced
    }

    private static func read(certificateFile: String, keyFile: String)
        throws(ServerCertificateError) -> (certificate: [UInt8], key: [UInt8]) {
        do { return (try CredentialFile.read(certificateFile), try CredentialFile.read(keyFile)) } catch {
            throw ServerCertificateError(description: "\(error)")
        }
    }

    private static func makeContext(_ bytes: (certificate: [UInt8], key: [UInt8]), alpn: [String],
                                    clientCAFile: String?, now: Int? = nil) throws(ServerCertificateError) -> (TLSContext, Int) {
        do {
            let identity = try TLSIdentity.pem(certificate: bytes.certificate, privateKey: bytes.key)
            if let now, now > identity.notAfter {
                throw ServerCertificateError(description: "the certificate expired on \(certificateDateText(identity.notAfter))")
            }
            return (try TLSContext.server(identity: identity, alpn: alpn, clientCAFile: clientCAFile,
                                          requireClientCertificate: false), identity.notAfter)
        } catch let error as ServerCertificateError {
            throw error
        } catch {
            throw ServerCertificateError(description: "\(error)")
        }
    }
}

/// Why the relay's own certificate or key does not load.
struct ServerCertificateError: Error, Equatable, CustomStringConvertible {
    var description: String
}
