/// Caps on what one request may make the relay buffer (ARCHITECTURE.md §1, §6).
public struct HTTP1Limits: Sendable, Equatable {
    /// Request line plus header fields plus the empty line (and, for chunked
    /// bodies, the framing overhead and trailers). Beyond: 431 (414 while still
    /// in the request line).
    public var maxHeaderBytes: Int
    /// Decoded body bytes. Beyond: 413.
    public var maxBodyBytes: Int
    /// Header fields. Beyond: 431.
    public var maxHeaderCount: Int

    public init(maxHeaderBytes: Int = Configuration.defaults.maxHeaderBytes,
                maxBodyBytes: Int = Configuration.defaults.maxBodyBytes,
                maxHeaderCount: Int = Configuration.maxHeaderCount) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderCount = maxHeaderCount
    }
}

/// A complete, well-framed request.
public struct HTTP1Request: Sendable, Equatable {
    public var method: String
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// The body, chunked framing removed.
    public var body: [UInt8]
    /// Whether the connection may carry another request after this one
    /// (RFC 9112 §9.3).
    public var keepAlive: Bool

    public init(method: String, target: String, version: HTTPVersion, headers: HTTPHeaders, body: [UInt8],
                keepAlive: Bool) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }
}

/// Why a request was refused: the status to answer with (then close) and a
/// one-line reason for the response body and the log.
public struct HTTP1ParseError: Error, Sendable, Equatable {
    public var status: Int
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }
}

public enum HTTP1ParseResult: Sendable, Equatable {
    /// A request, and how many bytes of the buffer it took (head, body and
    /// framing). Bytes after `consumed` belong to the next (pipelined) request.
    case complete(HTTP1Request, consumed: Int)
    /// More bytes are needed. `expectsContinue` is true once the head is
    /// complete, carries `Expect: 100-continue` (HTTP/1.1 only, RFC 9110
    /// §10.1.1) and the body has not fully arrived: the connection should send
    /// `HTTP/1.1 100 Continue` once (it stays true on later calls).
    case incomplete(expectsContinue: Bool)
    /// The request is malformed or over a limit: answer `status`, then close.
    case invalid(HTTP1ParseError)
}
