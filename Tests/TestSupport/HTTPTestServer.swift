import Foundation
import Glibc
import Locking

/// A small HTTP/1.1 server on 127.0.0.1, port 0, for tests of HTTP clients
/// (the feedback hook): it records each request and answers as `reply`
/// says, keeping connections alive. One thread accepts, one serves each
/// connection; blocking sockets, as nothing here is under load. Not a
/// general server: requests need `Content-Length` (no chunked bodies).
public final class HTTPTestServer: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var target: String
        /// Names lower-cased, in arrival order.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public func header(_ name: String) -> String? {
            headers.first { $0.name == name.lowercased() }?.value
        }
    }

    public enum Reply: Sendable {
        /// Answer with this status and an empty body.
        case status(Int)
        /// Never answer; hold the connection until the server stops.
        case stall
    }

    public var port: UInt16 { tcp.port }
    private let tcp: TCPTestServer
    private let reply: @Sendable (Request) -> Reply
    private let requestLog = Locked<[Request]>([])

    /// Starts listening; `reply` is asked once per request, on its
    /// connection's thread. Call `stop()` when done: until then its threads keep it.
    public init(reply: @escaping @Sendable (Request) -> Reply) throws {
        tcp = try TCPTestServer(name: "HTTPTestServer")
        self.reply = reply
        tcp.start { [self] fd in serve(fd) }
    }

    /// A port nothing listens on (bound, then closed): connecting is refused.
    public static func closedPort() throws -> UInt16 {
        let server = try HTTPTestServer { _ in .status(200) }
        let port = server.port
        server.stop()
        return port
    }

    /// Every request received so far, in order.
    public var requests: [Request] { requestLog.withLock { $0 } }

    /// Connections accepted so far.
    public var acceptedConnections: Int { tcp.acceptedConnections }

    /// Connections open now (closed by neither side yet).
    public var openConnections: Int { tcp.openConnections }

    /// Stops accepting and ends every connection (a stalled one too).
    public func stop() { tcp.stop() }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        while let request = readRequest(fd, &buffer) {
            requestLog.withLock { $0.append(request) }
            switch reply(request) {
            case .status(let status):
                let head = "HTTP/1.1 \(status) Test\r\nContent-Length: 0\r\n\r\n"
                guard TCPTestServer.writeAll(fd, Array(head.utf8)) else { return }
            case .stall:
                // Until stop() shuts the socket down: the read then ends.
                var byte: UInt8 = 0
                while read(fd, &byte, 1) > 0 {}
                return
            }
        }
    }

    /// Reads one request (head and Content-Length body); nil at end of
    /// stream or on a malformed head.
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> Request? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            if let range = buffer.firstRange(of: separator) {
                headEnd = range.upperBound
            } else if !readMore(fd, &buffer) {
                return nil
            }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: buffer[..<(headEnd - 4)], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((name: line[..<colon].lowercased(),
                            value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let length = Int(headers.first { $0.name == "content-length" }?.value ?? "0") ?? 0
        while buffer.count < headEnd + length {
            guard readMore(fd, &buffer) else { return nil }
        }
        let body = Array(buffer[headEnd..<(headEnd + length)])
        buffer.removeFirst(headEnd + length)
        return Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: body)
    }

    private func readMore(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let count = read(fd, &chunk, chunk.count)
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }
}
