// The OpenSSL edge (ARCHITECTURE.md §5): only the files in Sources/TLS/OpenSSL/
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

extension OpenSSLProviders {
    static var libraryVersion: String {
        String(cString: OpenSSL_version(OPENSSL_VERSION))
    }

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
