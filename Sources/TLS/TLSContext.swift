// A Swift owner of an OpenSSL object: it holds its SSL_CTX as an opaque
// pointer and frees it in deinit; only the files in Sources/TLS/OpenSSL/ call
// OpenSSL or touch its pointers (ARCHITECTURE.md §3).

/// An OpenSSL SSL_CTX: the configuration shared by many connections. Once
/// made it is only read (SSL_new is thread-safe), so it may be shared.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer  // SSL_CTX*, owned
    let isServer: Bool
    /// Kept alive for the ALPN select callback (server side).
    private let alpnList: ALPNProtocolList?
    /// The identity's objects are up-referenced by the SSL_CTX; holding the
    /// Swift owner too keeps the lifetime obvious.
    private let identity: TLSIdentity?

    private init(server: Bool, identity: TLSIdentity?, alpn: [String], verifyFile: String?,
                 requireClientCertificate: Bool = true) throws(TLSError) {
        (context, alpnList) = try SSLContext.make(
            server: server, identity: identity?.objects, alpn: alpn, verifyFile: verifyFile,
            requireClientCertificate: requireClientCertificate)
        isServer = server
        self.identity = identity
    }

    deinit { SSLContext.free(context) }

    /// A client context: TLS 1.2 or later, the server's certificate verified
    /// against `trustedRootsFile` (PEM) or the system's roots when nil,
    /// `identity` presented when the server asks (APNs certificate auth), and
    /// `alpn` offered in order of preference (APNs needs `["h2"]`).
    public static func client(trustedRootsFile: String?, identity: TLSIdentity?, alpn: [String]) throws(TLSError) -> TLSContext {
        try TLSContext(server: false, identity: identity, alpn: alpn, verifyFile: trustedRootsFile)
    }

    /// A server context. With `clientCAFile`, clients are asked for a
    /// certificate issued by one of its CAs: every client must present one
    /// (as APNs requires of certificate-based providers) unless
    /// `requireClientCertificate` is false, when a client may present none
    /// (an APNs host also serves token-based providers, which have none);
    /// a certificate presented either way must verify, or the handshake
    /// fails. ALPN: the first of `alpn` the client offers is chosen; a client
    /// offering ALPN but none of these gets a fatal no_application_protocol
    /// alert (RFC 7301 §3.2); a client offering no ALPN at all gets none.
    public static func server(identity: TLSIdentity, alpn: [String], clientCAFile: String?,
                              requireClientCertificate: Bool = true) throws(TLSError) -> TLSContext {
        try TLSContext(server: true, identity: identity, alpn: alpn, verifyFile: clientCAFile,
                       requireClientCertificate: requireClientCertificate)
    }
}
