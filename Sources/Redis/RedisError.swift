/// What went wrong with a Redis command or connection: the Redis layer's
/// own errors, each with one line of text for logs.
public enum RedisError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A connection attempt failed: resolving, connecting, or the server
    /// refused `AUTH` or `SELECT`, or all that took longer than the
    /// connect timeout.
    case connectFailed(String)
    /// No reply within the command timeout: the command was on a
    /// connection that then was dropped (a reply cannot be skipped), or
    /// no connection came up in time to send it.
    case timedOut(String)
    /// The connection failed while the command was written and not
    /// answered: it may or may not have run.
    case connectionLost(String)
    /// The server answered with an error reply (`-ERR …`, `-WRONGTYPE …`),
    /// its text capped at `maxServerErrorBytes`, on one line.
    case serverError(String)
    /// The server sent what is not RESP, or a reply past the reply limits
    /// (`RedisReplyLimits`): the connection was dropped.
    case protocolError(String)
    /// `maxPendingCommands` commands are waiting already: refused at once.
    case tooManyQueued(limit: Int)
    /// The connection was closed by its owner.
    case closed

    /// A server error's text is kept to this many bytes.
    public static let maxServerErrorBytes = 512

    /// A server error reply's text, as one line of at most
    /// `maxServerErrorBytes` (a hostile server's megabyte of error is not
    /// a log line).
    public static func serverError(replyText text: String) -> RedisError {
        .serverError(oneLine(text, limit: maxServerErrorBytes))
    }

    public var description: String {
        switch self {
        case .connectFailed(let reason): "Redis: cannot connect: \(reason)"
        case .timedOut(let reason): "Redis: timed out: \(reason)"
        case .connectionLost(let reason): "Redis: connection lost: \(reason)"
        case .serverError(let text): "Redis: error reply: \(text)"
        case .protocolError(let reason): "Redis: protocol error: \(reason)"
        case .tooManyQueued(let limit): "Redis: \(limit) commands waiting already"
        case .closed: "Redis: connection closed"
        }
    }
}

/// `text` on one line (control characters as spaces), at most `limit`
/// bytes of UTF-8 (cut at a character boundary, "…" marking the cut).
func oneLine(_ text: String, limit: Int) -> String {
    var result = ""
    var bytes = 0
    for scalar in text.unicodeScalars {
        let shown: Unicode.Scalar = scalar.value < 0x20 || scalar.value == 0x7F ? " " : scalar
        let size = UTF8.width(shown)
        guard bytes + size <= limit else { return result + "…" }
        result.unicodeScalars.append(shown)
        bytes += size
    }
    return result
}
