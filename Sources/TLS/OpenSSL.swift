// The one file of the TLS module that talks to OpenSSL (DESIGN §5: C stays at
// the edge). Every other file holds OpenSSL objects only as opaque pointers
// owned by a Swift class that hands them back here to be freed in `deinit`.
import COpenSSL
import Glibc

enum OpenSSL {
    static var version: String {
        String(cString: OpenSSL_version(OPENSSL_VERSION))
    }

    // MARK: - Providers

    /// OpenSSL 3 moved RC2, RC4, DES and friends into the "legacy" provider,
    /// which is not loaded by default; p12 files exported by the macOS Keychain
    /// (RC2-40 / 3DES) cannot be decrypted without it. Loading any provider
    /// explicitly disables the implicit "default" one, so both are loaded.
    /// The set lives for the whole process (a `static let` is initialised
    /// exactly once, thread-safely).
    final class ProviderSet: @unchecked Sendable {
        private let defaultProvider: OpaquePointer?
        private let legacyProvider: OpaquePointer?
        var legacyLoaded: Bool { legacyProvider != nil }

        init() {
            defaultProvider = OSSL_PROVIDER_load(nil, "default")
            legacyProvider = OSSL_PROVIDER_load(nil, "legacy")
            // A missing legacy provider is reported when a p12 needs it.
            ERR_clear_error()
        }

        deinit {
            if let legacyProvider { OSSL_PROVIDER_unload(legacyProvider) }
            if let defaultProvider { OSSL_PROVIDER_unload(defaultProvider) }
        }
    }

    static let providers = ProviderSet()

    /// Runs `body` with a fresh library context, holding only the named
    /// providers, as this thread's default: lets tests see how parsing behaves
    /// when a provider (legacy) is missing, without touching other threads.
    /// `body` must not suspend (the override is per thread).
    static func withIsolatedLibraryContext<T>(providers names: [String], _ body: () throws -> T) rethrows -> T? {
        guard let context = OSSL_LIB_CTX_new() else { return nil }
        var loaded: [OpaquePointer] = []
        for name in names {
            if let provider = OSSL_PROVIDER_load(context, name) { loaded.append(provider) }
        }
        let previous = OSSL_LIB_CTX_set0_default(context)
        defer {
            OSSL_LIB_CTX_set0_default(previous)
            for provider in loaded { OSSL_PROVIDER_unload(provider) }
            OSSL_LIB_CTX_free(context)
            ERR_clear_error()
        }
        return try body()
    }

    // MARK: - Error queue

    struct QueuedError {
        let library: Int32
        let reason: Int32
        let text: String
    }

    /// Empties this thread's error queue and returns what was in it, oldest first.
    static func drainErrors() -> [QueuedError] {
        var errors: [QueuedError] = []
        while true {
            var data: UnsafePointer<CChar>? = nil
            var flags: Int32 = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            if code == 0 { break }
            var text = ""
            if let library = ERR_lib_error_string(code) { text += String(cString: library) + ": " }
            if let reason = ERR_reason_error_string(code) {
                text += String(cString: reason)
            } else {
                text += "error \(ERR_GET_REASON(code))"
            }
            if let data, flags & ERR_TXT_STRING != 0 {
                let detail = String(cString: data)
                if !detail.isEmpty { text += " (\(detail))" }
            }
            errors.append(QueuedError(library: ERR_GET_LIB(code), reason: ERR_GET_REASON(code), text: text))
        }
        return errors
    }

    /// One line summarising the error queue (which it empties), or `fallback`.
    static func errorLine(_ errors: [QueuedError], fallback: String) -> String {
        if errors.isEmpty { return fallback }
        var seen: [String] = []
        for error in errors where !seen.contains(error.text) { seen.append(error.text) }
        return seen.prefix(3).joined(separator: "; ")
    }

    static func drainedErrorLine(fallback: String) -> String {
        errorLine(drainErrors(), fallback: fallback)
    }

    // MARK: - Freeing

    static func freeCertificate(_ certificate: OpaquePointer) { X509_free(certificate) }
    static func freeKey(_ key: OpaquePointer) { EVP_PKEY_free(key) }
    static func freeChain(_ chain: OpaquePointer) { shim_sk_X509_pop_free(chain) }
    static func freeContext(_ context: OpaquePointer) { SSL_CTX_free(context) }
    static func freeConnection(_ connection: OpaquePointer) { SSL_free(connection) }

    // MARK: - Certificates

    static func chainCount(_ chain: OpaquePointer) -> Int {
        Int(shim_sk_X509_num(chain))
    }

    static func subjectUID(_ certificate: OpaquePointer) -> String? {
        subjectEntry(certificate, nid: NID_userId)
    }

    static func subjectCommonName(_ certificate: OpaquePointer) -> String? {
        subjectEntry(certificate, nid: NID_commonName)
    }

    private static func subjectEntry(_ certificate: OpaquePointer, nid: Int32) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0,
              let entry = X509_NAME_get_entry(name, index),
              let value = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, value)
        guard length >= 0, let utf8 else { return nil }
        defer { shim_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// The certificate's notBefore / notAfter as unix seconds.
    static func validity(_ certificate: OpaquePointer) -> (notBefore: Int, notAfter: Int)? {
        guard let notBefore = unixSeconds(X509_get0_notBefore(certificate)),
              let notAfter = unixSeconds(X509_get0_notAfter(certificate))
        else { return nil }
        return (notBefore, notAfter)
    }

    private static func unixSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int? {
        guard let time else { return nil }
        var fields = tm()
        guard ASN1_TIME_to_tm(time, &fields) == 1 else { return nil }
        return Int(timegm(&fields))
    }

    struct Identity {
        let certificate: OpaquePointer
        let key: OpaquePointer
        let chain: OpaquePointer
    }

    /// Checks the key belongs to the certificate; on failure frees nothing.
    private static func keyMatches(_ certificate: OpaquePointer, _ key: OpaquePointer) -> Bool {
        let matches = X509_check_private_key(certificate, key) == 1
        ERR_clear_error()
        return matches
    }

    // MARK: - PKCS#12

    static func parsePKCS12(_ bytes: [UInt8], password: String, legacyAvailable: Bool) throws(CredentialError) -> Identity {
        ERR_clear_error()
        let decoded: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let p12 = decoded else {
            throw .notPKCS12(drainedErrorLine(fallback: "DER decoding failed"))
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
            let errors = drainErrors()
            if errors.contains(where: isUnsupportedAlgorithm) {
                throw legacyAvailable
                    ? .unsupportedAlgorithm(errorLine(errors, fallback: "unsupported algorithm"))
                    : .legacyProviderUnavailable
            }
            throw .corruptPKCS12(errorLine(errors, fallback: "cannot decrypt its contents"))
        }
        return try assemble(certificate: certificate, key: key, chain: chain)
    }

    private static func macFailure(legacyAvailable: Bool) -> CredentialError {
        // PKCS12_verify_mac leaves the queue empty when the MAC merely differs
        // (wrong password); anything queued means the MAC could not be computed.
        let errors = drainErrors()
        if errors.isEmpty { return .wrongPassword }
        if errors.contains(where: isUnsupportedAlgorithm) {
            return legacyAvailable
                ? .unsupportedAlgorithm(errorLine(errors, fallback: "unsupported MAC algorithm"))
                : .legacyProviderUnavailable
        }
        return .corruptPKCS12(errorLine(errors, fallback: "cannot verify its MAC"))
    }

    private static func isUnsupportedAlgorithm(_ error: QueuedError) -> Bool {
        error.reason == shim_ERR_R_UNSUPPORTED()
            || (error.library == ERR_LIB_EVP
                && (error.reason == EVP_R_UNSUPPORTED_ALGORITHM || error.reason == EVP_R_UNSUPPORTED_CIPHER))
    }

    /// Takes ownership of the three (possibly nil) objects: either returns them
    /// as an Identity or frees them and throws.
    private static func assemble(certificate: OpaquePointer?, key: OpaquePointer?, chain: OpaquePointer?) throws(CredentialError) -> Identity {
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
        return Identity(certificate: certificate, key: key, chain: chain)
    }

    // MARK: - PEM

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

    private static func isNoStartLine(_ error: QueuedError) -> Bool {
        error.library == ERR_LIB_PEM && error.reason == PEM_R_NO_START_LINE
    }

    /// OpenSSL 3's decoders answer "unsupported" when the PEM holds no block
    /// they can read as a key (a certificate, say): no key in the file.
    private static func isNoKeyFound(_ error: QueuedError) -> Bool {
        isNoStartLine(error) || (error.library == ERR_LIB_OSSL_DECODER && error.reason == shim_ERR_R_UNSUPPORTED())
    }

    static func parsePEMIdentity(certificate certificateBytes: [UInt8], privateKey keyBytes: [UInt8]) throws(CredentialError) -> Identity {
        ERR_clear_error()
        // The certificate file: the leaf first, then any chain certificates.
        var leaf: OpaquePointer? = nil
        let chain = shim_sk_X509_new_null()
        var failure: CredentialError? = nil
        _ = withMemoryBIO(certificateBytes) { bio in
            while true {
                guard let certificate = PEM_read_bio_X509(bio, nil, noPassword, nil) else {
                    let errors = drainErrors()
                    if leaf == nil {
                        failure = errors.allSatisfy(isNoStartLine)
                            ? .noCertificate
                            : .invalidPEM(what: "certificate", reason: errorLine(errors, fallback: "unreadable"))
                    } else if !errors.allSatisfy(isNoStartLine) {
                        failure = .invalidPEM(what: "certificate chain", reason: errorLine(errors, fallback: "unreadable"))
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
            key = withMemoryBIO(keyBytes) { bio in PEM_read_bio_PrivateKey(bio, nil, noPassword, nil) } ?? nil
            if key == nil {
                let errors = drainErrors()
                failure = errors.allSatisfy(isNoKeyFound)
                    ? .noPrivateKey
                    : .invalidPEM(what: "private key", reason: errorLine(errors, fallback: "unreadable"))
            }
        }
        if let failure {
            if let leaf { X509_free(leaf) }
            if let key { EVP_PKEY_free(key) }
            if let chain { shim_sk_X509_pop_free(chain) }
            throw failure
        }
        return try assemble(certificate: leaf, key: key, chain: chain)
    }

    // MARK: - ES256 (RFC 7518 §3.4)

    static func readP256PrivateKey(_ pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        let read = withMemoryBIO(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, noPassword, nil) } ?? nil
        guard let key = read else {
            let errors = drainErrors()
            if errors.allSatisfy(isNoKeyFound) { throw .noPrivateKey }
            throw .invalidPEM(what: "private key", reason: errorLine(errors, fallback: "unreadable"))
        }
        return try requireP256(key)
    }

    static func readP256PublicKey(_ pem: [UInt8]) throws(CredentialError) -> OpaquePointer {
        ERR_clear_error()
        let read = withMemoryBIO(pem) { bio in PEM_read_bio_PUBKEY(bio, nil, noPassword, nil) } ?? nil
        guard let key = read else {
            throw .invalidPEM(what: "public key", reason: drainedErrorLine(fallback: "no PUBLIC KEY block"))
        }
        return try requireP256(key)
    }

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

    static let es256ComponentLength = 32

    static func es256Sign(key: OpaquePointer, message: [UInt8]) throws(CredentialError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw .signingFailed(drainedErrorLine(fallback: "cannot initialise ECDSA"))
        }
        var der = [UInt8](repeating: 0, count: 80)  // ECDSA P-256 DER is at most 72 bytes
        var derLength = der.count
        let signed = message.withUnsafeBufferPointer { input in
            EVP_DigestSign(context, &der, &derLength, input.baseAddress, input.count)
        }
        guard signed == 1 else {
            throw .signingFailed(drainedErrorLine(fallback: "ECDSA signing failed"))
        }
        // JWS wants r‖s, each left-padded to 32 bytes, not DER.
        let decoded: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, derLength)
        }
        guard let signature = decoded else {
            throw .signingFailed(drainedErrorLine(fallback: "cannot decode the DER signature"))
        }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 2 * es256ComponentLength)
        let written = raw.withUnsafeMutableBufferPointer { out -> Bool in
            guard let base = out.baseAddress, let r, let s else { return false }
            return BN_bn2binpad(r, base, Int32(es256ComponentLength)) == es256ComponentLength
                && BN_bn2binpad(s, base + es256ComponentLength, Int32(es256ComponentLength)) == es256ComponentLength
        }
        guard written else { throw .signingFailed("signature component larger than 32 bytes") }
        return raw
    }

    static func es256Verify(key: OpaquePointer, message: [UInt8], signature raw: [UInt8]) -> Bool {
        guard raw.count == 2 * es256ComponentLength else { return false }
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard let signature = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(signature) }
        let components = raw.withUnsafeBufferPointer { buffer -> (OpaquePointer?, OpaquePointer?) in
            (BN_bin2bn(buffer.baseAddress, Int32(es256ComponentLength), nil),
             BN_bin2bn(buffer.baseAddress.map { $0 + es256ComponentLength }, Int32(es256ComponentLength), nil))
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

    // MARK: - TLS contexts

    /// ALPN protocol list in wire format (RFC 7301 §3.1: length-prefixed
    /// strings of 1...255 bytes).
    static func alpnWireFormat(_ protocols: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError(.configuration, "ALPN protocol names must be 1 to 255 bytes long, got \(bytes.count)")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire
    }

    /// The server's ALPN list, at a stable address for as long as the
    /// SSL_CTX lives (SSL_select_next_proto may point into it).
    final class ALPNList {
        let bytes: UnsafeMutableBufferPointer<UInt8>
        init(_ wire: [UInt8]) {
            bytes = .allocate(capacity: max(wire.count, 1))
            _ = bytes.initialize(from: wire)
        }
        deinit { bytes.deallocate() }
    }

    /// Server-side ALPN selection (RFC 7301 §3.2): the first of the server's
    /// protocols the client also offers. No overlap is a fatal
    /// no_application_protocol alert, as RFC 7301 §3.2 prescribes.
    private static let selectALPN: @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outLength, offered, offeredLength, argument in
        guard let out, let outLength, let offered, let argument else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        let list = Unmanaged<ALPNList>.fromOpaque(argument).takeUnretainedValue()
        guard let server = list.bytes.baseAddress else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        var selected: UnsafeMutablePointer<UInt8>? = nil
        var selectedLength: UInt8 = 0
        let outcome = SSL_select_next_proto(&selected, &selectedLength, server, UInt32(list.bytes.count), offered, offeredLength)
        guard outcome == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        out.pointee = UnsafePointer(selected)
        outLength.pointee = selectedLength
        return SSL_TLSEXT_ERR_OK
    }

    static func makeContext(
        server: Bool, identity: TLSIdentity?, alpn: [String], verifyFile: String?, requireClientCertificate: Bool,
        alpnList: inout ALPNList?
    ) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        let wire = try alpnWireFormat(alpn)
        guard let context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError(.configuration, "SSL_CTX_new: " + drainedErrorLine(fallback: "out of memory"))
        }
        do throws(TLSError) {
            try configure(context, server: server, identity: identity, wire: wire, verifyFile: verifyFile,
                          requireClientCertificate: requireClientCertificate, alpnList: &alpnList)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        return context
    }

    /// Caps the context at TLS 1.2 (tests: APNs and older peers may stop there).
    static func limitToTLS12(_ context: OpaquePointer) -> Bool {
        shim_SSL_CTX_set_max_proto_version(context, TLS1_2_VERSION) == 1
    }

    private static func configure(
        _ context: OpaquePointer, server: Bool, identity: TLSIdentity?, wire: [UInt8], verifyFile: String?,
        requireClientCertificate: Bool, alpnList: inout ALPNList?
    ) throws(TLSError) {
        guard shim_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw TLSError(.configuration, "cannot require TLS 1.2: " + drainedErrorLine(fallback: "refused"))
        }
        // Partial writes let a non-blocking caller keep its own buffer;
        // moving-buffer allows retrying from a different address. A server
        // (thousands of mostly idle senders) also releases its ~34 KiB of
        // read/write buffers whenever a connection goes quiet; a client (a
        // few busy APNs connections) keeps them, or it would free and
        // allocate them again after every burst.
        var mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
        if server { mode |= SSL_MODE_RELEASE_BUFFERS }
        _ = shim_SSL_CTX_set_mode(context, Int(mode))
        // Renegotiation (TLS 1.2 only) is never needed here and has a history of attacks.
        _ = SSL_CTX_set_options(context, shim_SSL_OP_NO_RENEGOTIATION())

        if let identity {
            guard SSL_CTX_use_certificate(context, identity.certificate) == 1,
                  SSL_CTX_use_PrivateKey(context, identity.key) == 1,
                  shim_SSL_CTX_set1_chain(context, identity.chain) == 1,
                  SSL_CTX_check_private_key(context) == 1
            else {
                throw TLSError(.configuration, "cannot use the identity: " + drainedErrorLine(fallback: "refused"))
            }
        }

        if server {
            if let verifyFile {
                guard SSL_CTX_load_verify_locations(context, verifyFile, nil) == 1 else {
                    throw TLSError(.configuration, "cannot load client CA file \(verifyFile): " + drainedErrorLine(fallback: "unreadable"))
                }
                // Names sent in CertificateRequest so clients pick a matching certificate.
                if let names = SSL_load_client_CA_file(verifyFile) {
                    SSL_CTX_set_client_CA_list(context, names)
                }
                ERR_clear_error()
                let mode = requireClientCertificate ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER
                SSL_CTX_set_verify(context, mode, nil)
            } else {
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            }
            if !wire.isEmpty {
                let list = ALPNList(wire)
                alpnList = list
                SSL_CTX_set_alpn_select_cb(context, selectALPN, Unmanaged.passUnretained(list).toOpaque())
            }
        } else {
            if let verifyFile {
                guard SSL_CTX_load_verify_locations(context, verifyFile, nil) == 1 else {
                    throw TLSError(.configuration, "cannot load trusted roots file \(verifyFile): " + drainedErrorLine(fallback: "unreadable"))
                }
            } else {
                guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                    throw TLSError(.configuration, "cannot load the system's trusted roots: " + drainedErrorLine(fallback: "unavailable"))
                }
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if !wire.isEmpty {
                // Inverted convention: 0 is success.
                guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {
                    throw TLSError(.configuration, "cannot set ALPN: " + drainedErrorLine(fallback: "refused"))
                }
            }
        }
    }

    // MARK: - Connections

    static func makeConnection(context: OpaquePointer, fd: Int32, server: Bool, serverName: String?) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let connection = SSL_new(context) else {
            throw TLSError(.configuration, "SSL_new: " + drainedErrorLine(fallback: "out of memory"))
        }
        // SSL_set_fd makes a socket BIO with BIO_NOCLOSE: the caller keeps the fd.
        guard SSL_set_fd(connection, fd) == 1 else {
            SSL_free(connection)
            throw TLSError(.configuration, "SSL_set_fd: " + drainedErrorLine(fallback: "failed"))
        }
        if server {
            SSL_set_accept_state(connection)
        } else {
            SSL_set_connect_state(connection)
            if let serverName {
                guard !serverName.isEmpty, !serverName.utf8.contains(0) else {
                    SSL_free(connection)
                    throw TLSError(.configuration, "invalid server name \"\(serverName)\"")
                }
                // An IP literal is checked against the certificate's IP SANs and
                // is not sent as SNI (RFC 6066 §3 forbids literals there); a
                // host name is both SNI and the name to verify.
                if X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(connection), serverName) == 1 {
                    ERR_clear_error()
                } else {
                    ERR_clear_error()
                    SSL_set_hostflags(connection, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                    guard SSL_set1_host(connection, serverName) == 1,
                          shim_SSL_set_tlsext_host_name(connection, serverName) == 1
                    else {
                        SSL_free(connection)
                        throw TLSError(.configuration, "invalid server name \(serverName): " + drainedErrorLine(fallback: "refused"))
                    }
                }
            }
        }
        return connection
    }

    enum Stage { case handshake, data }

    /// What a non-blocking SSL call's result means.
    enum Outcome {
        case done
        case wantRead
        case wantWrite
        case closed
        case failed(TLSError)
    }

    static func handshake(_ connection: OpaquePointer) -> Outcome {
        ERR_clear_error()
        let result = SSL_do_handshake(connection)
        let savedErrno = errno
        if result == 1 { return .done }
        return outcome(connection, result: result, errno: savedErrno, stage: .handshake)
    }

    static func read(_ connection: OpaquePointer, into buffer: UnsafeMutableRawBufferPointer) -> (Outcome, Int) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return (.done, 0) }
        ERR_clear_error()
        var count = 0
        let result = SSL_read_ex(connection, base, buffer.count, &count)
        let savedErrno = errno
        if result == 1 { return (.done, count) }
        return (outcome(connection, result: result, errno: savedErrno, stage: .data), 0)
    }

    static func write(_ connection: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> (Outcome, Int) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return (.done, 0) }
        ERR_clear_error()
        var count = 0
        let result = SSL_write_ex(connection, base, bytes.count, &count)
        let savedErrno = errno
        if result == 1 { return (.done, count) }
        return (outcome(connection, result: result, errno: savedErrno, stage: .data), 0)
    }

    private static func outcome(_ connection: OpaquePointer, result: Int32, errno savedErrno: Int32, stage: Stage) -> Outcome {
        switch SSL_get_error(connection, result) {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        case SSL_ERROR_SYSCALL:
            let errors = drainErrors()
            if savedErrno == 0 && errors.isEmpty { return .closed }  // EOF without close_notify
            if savedErrno != 0 {
                return .failed(TLSError(.syscall(savedErrno), String(cString: strerror(savedErrno))))
            }
            return .failed(TLSError(stage == .handshake ? .handshakeFailed : .protocolError,
                                    errorLine(errors, fallback: "I/O error")))
        default:
            let errors = drainErrors()
            // OpenSSL 3 reports EOF without close_notify as an error; for the
            // caller it is a closed connection like any other (HTTP/2 frames
            // its own messages, so truncation cannot go unnoticed).
            if errors.count == 1, errors[0].library == ERR_LIB_SSL, errors[0].reason == SSL_R_UNEXPECTED_EOF_WHILE_READING {
                return .closed
            }
            return .failed(classify(connection, errors: errors, stage: stage))
        }
    }

    private static func classify(_ connection: OpaquePointer, errors: [QueuedError], stage: Stage) -> TLSError {
        let line = errorLine(errors, fallback: stage == .handshake ? "handshake failed" : "TLS protocol error")
        let ssl = errors.filter { $0.library == ERR_LIB_SSL }.map(\.reason)
        if ssl.contains(SSL_R_CERTIFICATE_VERIFY_FAILED) {
            let verifyResult = SSL_get_verify_result(connection)
            let reason = verifyResult == X509_V_OK
                ? line
                : String(cString: X509_verify_cert_error_string(verifyResult))
            return TLSError(.certificateVerifyFailed(reason), "certificate verify failed: \(reason)")
        }
        if ssl.contains(SSL_R_NO_APPLICATION_PROTOCOL) || ssl.contains(SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL) {
            return TLSError(.alpnMismatch, "no ALPN protocol in common: \(line)")
        }
        return TLSError(stage == .handshake ? .handshakeFailed : .protocolError, line)
    }

    static func shutdown(_ connection: OpaquePointer) {
        ERR_clear_error()
        _ = SSL_shutdown(connection)
        ERR_clear_error()
    }

    static func negotiatedALPN(_ connection: OpaquePointer) -> String? {
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(connection, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The peer's certificate (not retained: valid while the connection lives).
    static func peerCertificate(_ connection: OpaquePointer) -> OpaquePointer? {
        SSL_get0_peer_certificate(connection)
    }

    /// Decrypted application bytes waiting inside OpenSSL. Not SSL_has_pending:
    /// it is also true for a partly received record, which a read cannot
    /// complete yet (a drain loop would spin); without read-ahead the rest of
    /// such a record is still in the kernel, where epoll sees it.
    static func hasBufferedReadData(_ connection: OpaquePointer) -> Bool {
        SSL_pending(connection) > 0
    }

    /// Read-ahead: OpenSSL reads as much as the socket holds into its buffer
    /// instead of each record's 5-byte header, then its body (two read(2)
    /// calls per record, i.e. per APNs answer). The buffer may then hold
    /// whole undecrypted records that epoll cannot announce: see
    /// `hasUnprocessedInput`.
    static func enableReadAhead(_ connection: OpaquePointer) {
        SSL_set_read_ahead(connection, 1)
    }

    /// Bytes inside OpenSSL not yet returned by a read: decrypted data or
    /// raw (read-ahead) records, complete or not.
    static func hasUnprocessedInput(_ connection: OpaquePointer) -> Bool {
        SSL_has_pending(connection) == 1
    }

    static func negotiatedProtocolVersion(_ connection: OpaquePointer) -> String {
        String(cString: SSL_get_version(connection))
    }
}
