// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: what an unfinished SSL call means.
import COpenSSL
import Glibc

/// The answers a non-blocking SSL call (handshake, read, write) has besides
/// success, which TLSResult and TLSIOResult share: one classification
/// (`unfinished`) serves both, specialised per type, without a closure.
protocol SSLCallResult {
    static var wantRead: Self { get }
    static var wantWrite: Self { get }
    static var closed: Self { get }
    static func failed(_ error: TLSError) -> Self
}

extension TLSResult: SSLCallResult {}
extension TLSIOResult: SSLCallResult {}

/// Whether the call was part of the handshake or carried data: the same
/// OpenSSL error is a failed handshake in one, a protocol error in the other.
enum SSLCallStage {
    case handshake, data

    var failureKind: TLSError.Kind { self == .handshake ? .handshakeFailed : .protocolError }
}

extension SSLCallResult {
    /// What a call that did not return 1 means (SSL_get_error(3)). `savedErrno`
    /// is errno read right after the call.
    static func unfinished(_ connection: OpaquePointer, result: Int32, errno savedErrno: Int32, stage: SSLCallStage) -> Self {
        switch SSL_get_error(connection, result) {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        case SSL_ERROR_SYSCALL:
            let errors = OpenSSLErrorQueue.takeAll()
            if savedErrno == 0 && errors.isEmpty { return .closed }  // EOF without close_notify
            if savedErrno != 0 {
                return .failed(TLSError(.syscall(savedErrno), String(cString: strerror(savedErrno))))
            }
            return .failed(TLSError(stage.failureKind, OpenSSLErrorQueue.line(errors, fallback: "I/O error")))
        default:
            let errors = OpenSSLErrorQueue.takeAll()
            // OpenSSL 3 reports EOF without close_notify as an error; for the
            // caller it is a closed connection like any other (HTTP/2 frames
            // its own messages, so truncation cannot go unnoticed).
            if errors.count == 1, errors[0].library == ERR_LIB_SSL, errors[0].reason == SSL_R_UNEXPECTED_EOF_WHILE_READING {
                return .closed
            }
            return .failed(stage.error(connection, errors: errors))
        }
    }
}

extension SSLCallStage {
    /// The failure OpenSSL's queued `errors` describe, in a verify failure
    /// with the verify result's text ("hostname mismatch", ...).
    fileprivate func error(_ connection: OpaquePointer, errors: [OpenSSLErrorQueue.Entry]) -> TLSError {
        let line = OpenSSLErrorQueue.line(errors, fallback: self == .handshake ? "handshake failed" : "TLS protocol error")
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
        return TLSError(failureKind, line)
    }
}
