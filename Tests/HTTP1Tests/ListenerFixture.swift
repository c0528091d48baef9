import EventLoop
import HTTP1
import HTTPCore
import Locking
import TLS

/// A request as the bytes a test sends: `POST` of `body` to `target`.
func postBytes(_ target: String = "/x", body: String = "hello", connectionClose: Bool = false) -> [UInt8] {
    Array(("POST \(target) HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n"
        + (connectionClose ? "Connection: close\r\n" : "") + "\r\n" + body).utf8)
}

/// What the handlers of every loop saw: the requests, in arrival order, and
/// the refusals (`"<status> <reason>"`).
final class HandlerRecord: Sendable {
    private let requests = Locked<[HTTP1Request]>([])
    private let refused = Locked<[String]>([])
    var all: [HTTP1Request] { requests.withLock { $0 } }
    var refusals: [String] { refused.withLock { $0 } }
    func record(_ request: HTTP1Request) { requests.withLock { $0.append(request) } }
    func recordRefusal(_ line: String) { refused.withLock { $0.append(line) } }
}

/// The listener's own tests' handler: records each request and answers it
/// with `status` and an empty body after `delay` on its loop, never inside
/// `handle` (as a handler waiting for APNs does); refusals are recorded.
final class AnsweringHandler: HTTP1RequestHandler {
    private let loop: EventLoop
    private let status: Int
    private let delay: Duration
    private let record: HandlerRecord

    init(loop: EventLoop, status: Int, delay: Duration, record: HandlerRecord) {
        (self.loop, self.status, self.delay, self.record) = (loop, status, delay, record)
    }

    func handle(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        record.record(request)
        let response = HTTP1Response(status: status)
        _ = loop.schedule(after: delay) { completion(response) }
        return nil
    }

    func logRefusal(status: Int, reason: String) { record.recordRefusal("\(status) \(reason)") }
    var refusals: HTTP1Refusals { .plainText }
    func flushLog() {}
}

/// A listener on 127.0.0.1 (port 0) over `threads` loops, each with an
/// `AnsweringHandler`.
final class ListenerFixture {
    let group: EventLoopGroup
    let listener: HTTP1Listener<AnsweringHandler>
    let port: UInt16
    let record = HandlerRecord()

    init(threads: Int = 2, reusePort: Bool = true, status: Int = 201, delay: Duration = .milliseconds(1),
         limits: HTTP1Limits = HTTP1Limits(), timeouts: HTTP1ConnectionMachine.Timeouts = .init(),
         maxConnections: Int = 1000, tlsContext: TLSContext? = nil, acceptingOn socket: Socket? = nil) throws {
        group = try EventLoopGroup(count: threads, namePrefix: "http1-test")
        let record = self.record
        let options = ListenerOptions(bindAddress: "127.0.0.1", port: 0, reusePort: reusePort, limits: limits,
                                      timeouts: timeouts, maxConnections: maxConnections)
        listener = HTTP1Listener(options: options, loops: group.loops, tlsContext: tlsContext, warn: { _ in }) { loop in
            AnsweringHandler(loop: loop, status: status, delay: delay, record: record)
        }
        if let socket { port = try listener.start(acceptingOn: socket) } else { port = try listener.start() }
    }

    func stop() {
        listener.beginShutdown()
        listener.closeAllConnections()
        group.stopAndJoin()
    }
}
