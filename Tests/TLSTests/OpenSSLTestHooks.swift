// What only the tests ask of OpenSSL, kept out of the TLS module (no
// test-only code in production): an isolated library context, a TLS 1.2 cap,
// the negotiated and linked versions, the chain length, the peer's common
// name. The one test file that imports COpenSSL; in Sources only
// Sources/TLS/OpenSSL/ calls OpenSSL (ARCHITECTURE.md §3).
import COpenSSL
@testable import TLS

enum OpenSSLTestHooks {
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
}

extension TLSIdentity {
    /// A p12 parsed as if the legacy provider were (not) loaded.
    static func pkcs12(_ data: [UInt8], password: String, legacyAvailable: Bool) throws(CredentialError) -> TLSIdentity {
        try TLSIdentity(PKCS12Bundle.parse(data, password: password, legacyAvailable: legacyAvailable))
    }

    /// Number of chain (CA) certificates carried along with the leaf.
    var chainLength: Int { Int(shim_sk_X509_num(objects.chain)) }
}

extension TLSContext {
    /// The linked OpenSSL's version text, e.g. "OpenSSL 3.0.19 27 Jan 2026".
    static var openSSLVersion: String { String(cString: OpenSSL_version(OPENSSL_VERSION)) }

    /// Caps this context at TLS 1.2, before any connection is made: lets
    /// tests exercise the TLS 1.2 handshake (client authentication fails
    /// inside the client's handshake there, not on its first read; APNs and
    /// older peers may stop at 1.2).
    func limitToTLS12() -> Bool {
        shim_SSL_CTX_set_max_proto_version(context, TLS1_2_VERSION) == 1
    }
}

extension TLSConnection {
    /// "TLSv1.3", "TLSv1.2", ...
    var protocolVersion: String { String(cString: SSL_get_version(connection)) }

    var peerCertificateSubjectCommonName: String? {
        SSLConnection.peerCertificate(connection).flatMap(X509Certificate.subjectCommonName)
    }
}
