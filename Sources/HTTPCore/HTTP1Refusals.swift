/// How a listener words the refusals its connections make before a request
/// reaches the handler (framing, limits, timeouts: 400, 408, 413, 417, 431,
/// 501, 505): the connection machine decides when to refuse, the listener's
/// handler says in which dialect. The relay's Web Push port answers plain
/// text; its provider API answers as gorush does for every error (Relay's
/// `HTTP1Refusals.gorushJSON`).
public struct HTTP1Refusals: Sendable {
    private let render: @Sendable (_ status: Int, _ reason: String) -> HTTP1Response
    /// Whether a request that does not arrive in time is answered 408
    /// (RFC 9110 §15.5.9); false: the connection closes without an answer,
    /// for clients that would take a 408 as a verdict on what they sent.
    public let answersTimeouts: Bool

    public init(answersTimeouts: Bool = true,
                _ render: @escaping @Sendable (_ status: Int, _ reason: String) -> HTTP1Response) {
        self.render = render
        self.answersTimeouts = answersTimeouts
    }

    /// The same wording, closing on a timeout without an answer.
    public func closingSilentlyOnTimeouts() -> HTTP1Refusals {
        HTTP1Refusals(answersTimeouts: false, render)
    }

    /// The answer to a refused request; the machine adds `Connection: close`.
    public func response(status: Int, reason: String) -> HTTP1Response {
        render(status, reason)
    }

    /// The Web Push port's dialect: the one-line reason as text/plain, the
    /// same as the relay's own refusals there (RFC 8030 prescribes no body).
    public static let plainText = HTTP1Refusals { status, reason in
        HTTP1Response(status: status, headers: textPlainHeaders, body: reason + "\n")
    }
}

/// `Content-Type: text/plain; charset=utf-8`, the one field of a plain-text answer.
public let textPlainHeaders = [HTTPField(name: "Content-Type", value: "text/plain; charset=utf-8")]
