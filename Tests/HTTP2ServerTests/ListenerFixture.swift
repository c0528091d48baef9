import EventLoop
import Glibc
import HTTP1
import HTTP2
import HTTP2Server
import HTTPCore
import Locking
import TestSupport
import TLS

/// What the handlers saw: the requests, in arrival order.
final class RequestLog: Sendable {
    private let requests = Locked<[HTTP1Request]>([])
    var all: [HTTP1Request] { requests.withLock { $0 } }
    func record(_ request: HTTP1Request) { requests.withLock { $0.append(request) } }
}

/// Answers every request with `status` and the target as its body, after
/// `delay` on its loop (never inside `handle`, as a handler waiting for
/// APNs does).
final class EchoingHandler: HTTP1RequestHandler {
    private let loop: EventLoop
    private let status: Int
    private let delay: Duration
    private let log: RequestLog

    init(loop: EventLoop, status: Int, delay: Duration, log: RequestLog) {
        (self.loop, self.status, self.delay, self.log) = (loop, status, delay, log)
    }

    func handle(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        log.record(request)
        let response = HTTP1Response(status: status, headers: [HTTPField(name: "Connection", value: "keep-alive"),
                                                               HTTPField(name: "X-Method", value: request.method)],
                                     body: request.target)
        _ = loop.schedule(after: delay) { completion(response) }
        return nil
    }

    func logRefusal(status: Int, reason: String) {}
    var refusals: HTTP1Refusals { .plainText }
    func flushLog() {}
}

/// An HTTP/1.1 listener on 127.0.0.1 that switches to HTTP/2 (one loop).
final class SwitchingListener {
    let group: EventLoopGroup
    let listener: HTTP1Listener<EchoingHandler>
    let port: UInt16
    let log = RequestLog()

    init(delay: Duration = .milliseconds(1), limits: HTTP1Limits = HTTP1Limits(),
         timeouts: HTTP1ConnectionMachine.Timeouts = .init(), http2: HTTP2ServerLimits = HTTP2ServerLimits(),
         maxConnections: Int = 100, tlsContext: TLSContext? = nil) throws {
        group = try EventLoopGroup(count: 1, namePrefix: "http2-server-test")
        let log = self.log
        let options = ListenerOptions(bindAddress: "127.0.0.1", port: 0, limits: limits, timeouts: timeouts,
                                      maxConnections: maxConnections)
        listener = HTTP1Listener(options: options, loops: group.loops, tlsContext: tlsContext,
                                 protocolSwitch: HTTP2ProtocolSwitch(limits: http2), warn: { _ in }) { loop in
            EchoingHandler(loop: loop, status: 201, delay: delay, log: log)
        }
        port = try listener.start()
    }

    func stop() {
        listener.beginShutdown()
        listener.closeAllConnections()
        group.stopAndJoin()
    }
}

/// A well-behaved HTTP/2 client (the project's own client session) over a
/// blocking test socket.
final class SessionClient: HTTP2ClientSessionDelegate {
    let socket: TestClient
    private(set) var session: HTTP2ClientSession!
    var statuses: [Int32: Int] = [:]
    var fields: [Int32: [(name: String, value: String)]] = [:]
    var bodies: [Int32: [UInt8]] = [:]
    var closed: [Int32: HTTP2ErrorCode] = [:]
    var goAway: (lastStreamID: Int32, errorCode: HTTP2ErrorCode)?
    var maxConcurrentStreams: UInt32?

    init(port: UInt16) throws {
        socket = try TestClient(port: port, timeoutSeconds: 5)
        session = try HTTP2ClientSession(delegate: self)
    }

    func request(_ path: String, method: String = "GET", authority: String = "relay.test",
                 headers: [HTTPField] = [], body: [UInt8] = []) throws -> Int32 {
        try session.submitRequest(method: method, path: path, authority: authority, scheme: "http", fields: headers,
                                  body: body)
    }

    /// Sends what the session has and feeds what comes back until `done`
    /// (false: EOF or the socket's timeout came first).
    @discardableResult
    func exchange(until done: () -> Bool) throws -> Bool {
        while true {
            var output: [UInt8] = []
            session.takeOutput(into: &output)
            if !output.isEmpty { try socket.send(output) }
            if done() { return true }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            if let error = chunk.withUnsafeBytes({ feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) { throw error }
        }
    }

    /// Not a throwing closure: Swift 6.3.1 crashes compiling a
    /// `throws(HTTP2Error)` closure passed to `withUnsafeBytes`.
    private func feed(_ bytes: UnsafeRawBufferPointer) -> HTTP2Error? {
        do {
            try session.receive(bytes)
            return nil
        } catch {
            return error
        }
    }

    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int, fields: HTTP2HeaderFields, streamID: Int32) {
        statuses[streamID] = status
        self.fields[streamID] = Array(fields)
    }

    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        bodies[streamID, default: []].append(contentsOf: bytes)
    }

    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
        closed[streamID] = errorCode
    }

    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode,
                 debugData: String) {
        goAway = (lastStreamID, errorCode)
    }

    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64) {}
}
