import EventLoop
import HTTP1
import HTTPCore

/// The metrics endpoint (`METRICS_PORT`, `METRICS_BIND`), on an HTTP/1
/// listener of its own on one event loop, apart from the Web Push listener
/// so that metrics are never exposed to the senders. `GET /metrics` answers
/// the Prometheus text exposition format 0.0.4; anything else is a 404 or
/// 405. One request per connection (`Connection: close`): scrapers send one.
public final class MetricsHandler: HTTP1RequestHandler {
    private let exposition: () -> [UInt8]

    public init(exposition: @escaping () -> [UInt8]) {
        self.exposition = exposition
    }

    public func handle(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        var response = answer(method: request.method, target: request.target)
        response.closesConnection = true
        return response
    }

    private func answer(method: String, target: String) -> HTTP1Response {
        let path = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
        guard path == "/metrics" else {
            return HTTP1Response(status: 404, headers: textPlainHeaders, body: "not found\n")
        }
        guard method == "GET" || method == "HEAD" else {
            var response = HTTP1Response(status: 405, headers: textPlainHeaders, body: "method not allowed\n")
            response.headers.append(HTTPField(name: "Allow", value: "GET, HEAD"))
            return response
        }
        // HEAD: the connection sends the same head without the body.
        return HTTP1Response(status: 200, headers: Self.expositionHeaders, body: exposition())
    }

    static let expositionHeaders = [HTTPField(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")]

    /// Plain text, as the Web Push port's.
    public var refusals: HTTP1Refusals { .plainText }

    /// Nothing: the metrics port writes no log lines, for scrapes or for
    /// refusals (a scraper's mistakes are no sender's traffic).
    public func logRefusal(status: Int, reason: String) {}

    /// Nothing buffered: see `logRefusal`.
    public func flushLog() {}
}

extension HTTP1Listener where Handler == MetricsHandler {
    /// The metrics listener: `host` and `port` on `loop` alone, answering
    /// with `exposition()` (run on that loop). A scraper's request is a few
    /// hundred bytes and it needs one or two connections: the caps are
    /// small (8 KiB of head or body, 64 connections), and a connection that
    /// has not sent its request within 10 s is closed. The listener's own
    /// troubles are `logger`'s warnings.
    public convenience init(metricsOn host: String, port: UInt16, loop: EventLoop, logger: Logger,
                            exposition: @escaping @Sendable () -> [UInt8]) {
        let options = ListenerOptions(
            bindAddress: host, port: port, reusePort: false,
            limits: HTTP1Limits(maxHeaderBytes: 8192, maxBodyBytes: 8192),
            timeouts: .init(header: .seconds(10), body: .seconds(10), keepAlive: .seconds(10)),
            maxConnections: 64)
        self.init(options: options, loops: [loop], tlsContext: nil, warn: { logger.warning($0) }) { _ in
            MetricsHandler(exposition: exposition)
        }
    }
}
