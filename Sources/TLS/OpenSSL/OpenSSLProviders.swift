// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: the providers (OSSL_PROVIDER).
import COpenSSL

/// OpenSSL 3 moved RC2, RC4, DES and friends into the "legacy" provider,
/// which is not loaded by default; p12 files exported by the macOS Keychain
/// (RC2-40 / 3DES) cannot be decrypted without it. Loading any provider
/// explicitly disables the implicit "default" one, so both are loaded.
/// The set lives for the whole process (`shared` is a `static let`,
/// initialised exactly once, thread-safely, when PKCS#12 parsing first asks).
final class OpenSSLProviders: @unchecked Sendable {
    static let shared = OpenSSLProviders()

    private let defaultProvider: OpaquePointer?
    private let legacyProvider: OpaquePointer?
    var legacyLoaded: Bool { legacyProvider != nil }

    private init() {
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
