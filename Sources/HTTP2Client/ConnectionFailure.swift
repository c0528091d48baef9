/// Why a connection ended, classed by the phase it died in.
public enum ConnectionFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Name resolution, TCP connect, or the connect timeout.
    case connect(String)
    /// TLS handshake, certificate verification (either side), ALPN, or the
    /// first HTTP/2 exchange before the server's SETTINGS arrived.
    case tls(String)
    /// The connection died after it was ready (EOF, reset, TLS or HTTP/2
    /// error, no PING answer).
    case lost(String)

    public var description: String {
        switch self {
        case .connect(let detail), .tls(let detail), .lost(let detail): detail
        }
    }

    /// The failure of a request that was waiting for a connection (never
    /// sent) when this failure happened.
    var failureOfWaitingRequest: RequestFailure {
        switch self {
        case .connect(let detail): .connectFailed(detail)
        case .tls(let detail): .tlsFailed(detail)
        case .lost(let detail): .streamFailed(detail)
        }
    }
}
