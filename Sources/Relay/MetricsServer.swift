import EventLoop
import Glibc

/// The metrics listener (`METRICS_PORT`, `METRICS_BIND`): a minimal HTTP/1
/// responder on one event loop, apart from the Web Push listener so that
/// metrics are never exposed to the senders. `GET /metrics` answers the
/// Prometheus text exposition format 0.0.4; anything else is a 404 or 405.
/// One request per connection (`Connection: close`): scrapers send one.
public final class MetricsServer: @unchecked Sendable {
    private let loop: EventLoop
    private let exposition: @Sendable () -> [UInt8]
    private var acceptor: Acceptor?
    private var connections: [ObjectIdentifier: MetricsConnection] = [:]

    /// Largest request head read; a scraper's is a few hundred bytes.
    static let maxRequestBytes = 8192
    /// A connection that has not sent its request (or read the answer) by
    /// then is closed.
    static let timeout: Duration = .seconds(10)

    public init(loop: EventLoop, exposition: @escaping @Sendable () -> [UInt8]) {
        self.loop = loop
        self.exposition = exposition
    }

    /// Binds and starts accepting; returns the port bound. Call on the loop.
    public func start(host: String, port: UInt16) throws(SocketError) -> UInt16 {
        let socket = try Socket.listen(host: host, port: port, reusePort: false, backlog: 64)
        let bound = socket.localPort
        do {
            acceptor = try Acceptor(listener: socket, on: loop, maxPerWakeup: 16, onAccept: { [weak self] accepted in
                self?.adopt(accepted)
            })
        } catch {
            throw SocketError(.listen, errno: error.errno)
        }
        return bound
    }

    /// Stops accepting and closes every connection. Call on the loop.
    public func stop() {
        acceptor?.close()
        acceptor = nil
        for connection in Array(connections.values) { connection.close() }
    }

    private func adopt(_ socket: Socket) {
        // A scraper needs one or two connections; a cap keeps a flood from
        // costing more than a few descriptors.
        guard connections.count < 64 else {
            socket.close()
            return
        }
        let connection = MetricsConnection(socket: socket, loop: loop, exposition: exposition) { [weak self] closed in
            self?.connections[ObjectIdentifier(closed)] = nil
        }
        connections[ObjectIdentifier(connection)] = connection
        connection.start()
    }

    /// The answer to one request head (everything up to the blank line).
    static func response(toHead head: [UInt8], exposition: () -> [UInt8]) -> [UInt8] {
        let line = head.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return answer(status: "400 Bad Request", body: Array("bad request\n".utf8))
        }
        let method = Array(parts[0])
        var path = Array(parts[1])
        if let query = path.firstIndex(of: UInt8(ascii: "?")) { path = Array(path[..<query]) }
        guard path == Array("/metrics".utf8) else {
            return answer(status: "404 Not Found", body: Array("not found\n".utf8))
        }
        guard method == Array("GET".utf8) || method == Array("HEAD".utf8) else {
            return answer(status: "405 Method Not Allowed", body: Array("method not allowed\n".utf8),
                          extraHeaders: "Allow: GET, HEAD\r\n")
        }
        let body = exposition()
        return answer(status: "200 OK", body: body, contentType: "text/plain; version=0.0.4; charset=utf-8",
                      headOnly: method == Array("HEAD".utf8))
    }

    private static func answer(status: String, body: [UInt8], contentType: String = "text/plain; charset=utf-8",
                               extraHeaders: String = "", headOnly: Bool = false) -> [UInt8] {
        var bytes = Array(("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
            + extraHeaders + "Connection: close\r\n\r\n").utf8)
        if !headOnly { bytes += body }
        return bytes
    }
}

/// One metrics connection: read a request head, write the answer, close.
private final class MetricsConnection: IOHandler {
    private let socket: Socket
    private let loop: EventLoop
    private let exposition: () -> [UInt8]
    private let onClose: (MetricsConnection) -> Void
    private var input: [UInt8] = []
    private var output: [UInt8] = []
    private var written = 0
    private var timer: TimerID?
    private var closed = false

    init(socket: Socket, loop: EventLoop, exposition: @escaping () -> [UInt8],
         onClose: @escaping (MetricsConnection) -> Void) {
        self.socket = socket
        self.loop = loop
        self.exposition = exposition
        self.onClose = onClose
    }

    func start() {
        do {
            try loop.register(socket.fileDescriptor, interest: .readable, handler: self)
        } catch {
            close()
            return
        }
        timer = loop.schedule(after: MetricsServer.timeout) { [weak self] in
            self?.timer = nil
            self?.close()
        }
    }

    func handleIO(_ events: IOEvents) {
        guard !closed else { return }
        if events.contains(.error) {
            close()
            return
        }
        if output.isEmpty {
            read()
        } else if events.contains(.writable) {
            flush()
        }
    }

    private func read() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !closed && output.isEmpty {
            let result = chunk.withUnsafeMutableBytes { socket.read(into: $0) }
            switch result {
            case .bytes(let count):
                input += chunk[..<count]
                if let end = headEnd() {
                    output = MetricsServer.response(toHead: Array(input[..<end]), exposition: exposition)
                    flush()
                } else if input.count > MetricsServer.maxRequestBytes {
                    close()
                }
            case .wouldBlock:
                return
            case .endOfFile, .failed:
                close()
            }
        }
    }

    /// The index just past the head's blank line, if it arrived.
    private func headEnd() -> Int? {
        guard input.count >= 4 else { return nil }
        for index in 0...(input.count - 4)
        where input[index] == 13 && input[index + 1] == 10 && input[index + 2] == 13 && input[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    private func flush() {
        while written < output.count {
            let result = output[written...].withUnsafeBytes { socket.write($0) }
            switch result {
            case .bytes(let count):
                written += count
            case .wouldBlock:
                loop.setInterest(socket.fileDescriptor, .writable)
                return
            case .failed:
                close()
                return
            }
        }
        close()
    }

    func close() {
        guard !closed else { return }
        closed = true
        if let timer { loop.cancel(timer) }
        timer = nil
        loop.deregister(socket.fileDescriptor)
        socket.close()
        onClose(self)
    }
}
