// A Swift owner of an OpenSSL object: it holds its SSL as an opaque pointer
// and frees it in deinit; only the files in Sources/TLS/OpenSSL/ call OpenSSL
// or touch its pointers (ARCHITECTURE.md §3).

/// Result of a handshake step on a non-blocking socket.
public enum TLSResult: Equatable, Sendable {
    case complete
    /// Call again once the socket is readable.
    case wantRead
    /// Call again once the socket is writable.
    case wantWrite
    /// The peer closed the connection.
    case closed
    case failed(TLSError)
}

/// Result of a read or write on a non-blocking socket.
public enum TLSIOResult: Equatable, Sendable {
    /// Bytes read or written (never 0 for a non-empty buffer).
    case bytes(Int)
    case wantRead
    case wantWrite
    /// The peer closed the connection (close_notify, or EOF without it).
    case closed
    case failed(TLSError)
}

/// One TLS connection (an OpenSSL SSL) over a non-blocking socket that the
/// caller owns and closes. Not thread-safe: use it from one event loop.
public final class TLSConnection {
    let connection: OpaquePointer  // SSL*, owned
    /// Keeps the SSL_CTX's Swift owner (and its ALPN list) alive.
    public let context: TLSContext
    /// A call failed fatally: OpenSSL forbids SSL_shutdown from then on.
    private var hadFatalError = false

    /// `serverName` (client only): a host name is sent as SNI and verified
    /// against the certificate; an IP literal is verified against its IP
    /// addresses. nil verifies the chain only, not the name.
    public init(context: TLSContext, fd: Int32, serverName: String?) throws(TLSError) {
        self.context = context
        connection = try SSLConnection.make(
            context: context.context, fd: fd, server: context.isServer, serverName: serverName)
    }

    deinit { SSLConnection.free(connection) }

    public func handshake() -> TLSResult {
        let result = SSLConnection.handshake(connection)
        if case .failed = result { hadFatalError = true }
        return result
    }

    /// Reads decrypted bytes. After `.bytes`, call again while
    /// `hasBufferedReadData`: OpenSSL may hold bytes epoll cannot announce.
    /// May return `.wantWrite` (TLS 1.3 key updates): retry once writable.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSIOResult {
        let result = SSLConnection.read(connection, into: buffer)
        if case .failed = result { hadFatalError = true }
        return result
    }

    /// Writes some of `bytes` (partial writes are on). After `.wantWrite` or
    /// `.wantRead`, retry with at least the same bytes (they may have moved).
    /// The process must ignore SIGPIPE: OpenSSL writes with write(2).
    public func write(_ bytes: UnsafeRawBufferPointer) -> TLSIOResult {
        let result = SSLConnection.write(connection, bytes)
        if case .failed = result { hadFatalError = true }
        return result
    }

    /// Sends close_notify, best effort, without waiting for the peer's.
    public func shutdown() {
        guard !hadFatalError else { return }
        SSLConnection.shutdown(connection)
    }

    /// The ALPN protocol both sides agreed on, nil if none.
    public var negotiatedALPN: String? { SSLConnection.negotiatedALPN(connection) }

    /// The UID of the peer certificate's subject: on the server side, the
    /// APNs topic (bundle id) of a client authenticating with a certificate.
    public var peerCertificateSubjectUID: String? {
        SSLConnection.peerCertificate(connection).flatMap(X509Certificate.subjectUID)
    }

    /// True when the peer presented a certificate and it verified (on a
    /// server whose context only requests client certificates, whether this
    /// client authenticated with one; meaningful once the handshake is
    /// complete).
    public var hasVerifiedPeerCertificate: Bool { SSLConnection.hasVerifiedPeerCertificate(connection) }

    /// SHA-256 of the DER encoding of the peer's certificate when it
    /// presented one and it verified (a client authenticating with a
    /// certificate; meaningful once the handshake is complete), else nil.
    public var verifiedPeerCertificateSHA256: [UInt8]? {
        guard hasVerifiedPeerCertificate else { return nil }
        return SSLConnection.peerCertificate(connection).flatMap(X509Certificate.sha256Fingerprint)
    }

    /// True when decrypted bytes wait inside OpenSSL (SSL_pending), e.g.
    /// after a read into a buffer smaller than the record: the socket will
    /// not become readable for them, so the caller must keep reading.
    public var hasBufferedReadData: Bool { SSLConnection.hasBufferedReadData(connection) }

    /// Lets OpenSSL read everything the socket holds at once (one read(2) for
    /// many records instead of two per record). The caller must then read
    /// until `.wantRead` (or, when it stops early, come back while
    /// `hasUnprocessedInput`): bytes OpenSSL already took from the socket
    /// are invisible to epoll.
    public func enableReadAhead() { SSLConnection.enableReadAhead(connection) }

    /// Bytes inside OpenSSL a read has not returned yet, decrypted or not
    /// (true also for a partial record, which a read cannot finish yet).
    public var hasUnprocessedInput: Bool { SSLConnection.hasUnprocessedInput(connection) }
}
