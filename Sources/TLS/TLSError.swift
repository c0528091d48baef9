/// Why a TLS context, connection, handshake or transfer failed: a class to
/// act on and a one-line description taken from OpenSSL's error queue.
public struct TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// The peer's certificate chain or name did not verify; the reason is
        /// OpenSSL's verify result text ("hostname mismatch", ...).
        case certificateVerifyFailed(String)
        case handshakeFailed
        /// No ALPN protocol in common (RFC 7301 no_application_protocol alert).
        case alpnMismatch
        /// A TLS error after the handshake (bad record, alert from the peer...).
        case protocolError
        /// The socket failed with this errno.
        case syscall(Int32)
        /// Making the context or connection failed (unreadable CA file,
        /// unusable identity, bad ALPN name, out of memory).
        case configuration
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
