// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: TLS connections (SSL).
import COpenSSL
import Glibc

/// Making an SSL over a caller's socket and the non-blocking calls on it.
/// The SSL* is its caller's (TLSConnection), given back to `free`. Every
/// byte to and from APNs passes `read` and `write`: no allocation there.
enum SSLConnection {
    static func make(context: OpaquePointer, fd: Int32, server: Bool, serverName: String?) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let connection = SSL_new(context) else {
            throw TLSError(.configuration, "SSL_new: " + OpenSSLErrorQueue.takeLine(fallback: "out of memory"))
        }
        // SSL_set_fd makes a socket BIO with BIO_NOCLOSE: the caller keeps the fd.
        guard SSL_set_fd(connection, fd) == 1 else {
            SSL_free(connection)
            throw TLSError(.configuration, "SSL_set_fd: " + OpenSSLErrorQueue.takeLine(fallback: "failed"))
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
                        throw TLSError(.configuration, "invalid server name \(serverName): " + OpenSSLErrorQueue.takeLine(fallback: "refused"))
                    }
                }
            }
        }
        return connection
    }

    static func free(_ connection: OpaquePointer) { SSL_free(connection) }

    static func handshake(_ connection: OpaquePointer) -> TLSResult {
        ERR_clear_error()
        let result = SSL_do_handshake(connection)
        let savedErrno = errno
        if result == 1 { return .complete }
        return .unfinished(connection, result: result, errno: savedErrno, stage: .handshake)
    }

    static func read(_ connection: OpaquePointer, into buffer: UnsafeMutableRawBufferPointer) -> TLSIOResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        return transfer(.read, connection, base, buffer.count)
    }

    static func write(_ connection: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> TLSIOResult {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .bytes(0) }
        return transfer(.write, connection, base, bytes.count)
    }

    private enum Direction { case read, write }

    /// One SSL_read_ex or SSL_write_ex and what its result means. Inlined
    /// with a constant direction, so each caller keeps one direct call.
    @inline(__always)
    private static func transfer(_ direction: Direction, _ connection: OpaquePointer, _ base: UnsafeRawPointer, _ length: Int) -> TLSIOResult {
        ERR_clear_error()
        var count = 0
        let result = switch direction {
        case .read: SSL_read_ex(connection, UnsafeMutableRawPointer(mutating: base), length, &count)  // `read`'s buffer is mutable
        case .write: SSL_write_ex(connection, base, length, &count)
        }
        let savedErrno = errno
        if result == 1 { return .bytes(count) }
        return .unfinished(connection, result: result, errno: savedErrno, stage: .data)
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

    /// A peer certificate was presented and its chain verified. With
    /// SSL_VERIFY_PEER a failed verification already ends the handshake;
    /// the verify result is asked too so that no other configuration can
    /// make an unverified certificate count.
    static func hasVerifiedPeerCertificate(_ connection: OpaquePointer) -> Bool {
        SSL_get0_peer_certificate(connection) != nil && SSL_get_verify_result(connection) == Int(X509_V_OK)
    }

    /// Decrypted application bytes waiting inside OpenSSL. Not SSL_has_pending:
    /// it is also true for a partly received record, which a read cannot
    /// complete yet (a read loop would spin); without read-ahead the rest of
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
}
