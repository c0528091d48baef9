import HTTPCore

/// What a listener's connections hand their requests to (in the relay: the
/// Web Push handler on the main port, the provider API's on API_PORT, the
/// metrics endpoint). One per event loop, confined to it.
public protocol HTTP1RequestHandler: AnyObject {
    /// Answers `request`: the response when it is known at once; else nil,
    /// and `completion` runs exactly once later, on the loop thread, never
    /// inside this call.
    func handle(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response?
    /// A request the connection refused before routing (bad framing, over a
    /// limit, too slow): one log line.
    func logRefusal(status: Int, reason: String)
    /// How such a refusal is worded on this listener (see `HTTP1Refusals`).
    var refusals: HTTP1Refusals { get }
    /// Writes the log lines still buffered (shutdown).
    func flushLog()
}
