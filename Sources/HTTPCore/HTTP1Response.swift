/// An HTTP/1.1 response to serialize onto a sender connection.
public struct HTTP1Response: Sendable, Equatable {
    public var status: Int
    /// Header fields other than Content-Length and Connection, which
    /// `serialize` writes itself.
    public var headers: [HTTPField]
    public var body: [UInt8]
    /// The connection closes once this response is written (it says
    /// `Connection: close`, RFC 9112 §9.6), whatever the request asked: for
    /// a server that takes one request per connection.
    public var closesConnection = false

    public init(status: Int, headers: [HTTPField] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, headers: [HTTPField] = [], body: String) {
        self.init(status: status, headers: headers, body: Array(body.utf8))
    }

    /// `HTTP/1.1 100 Continue`, sent once when a request with
    /// `Expect: 100-continue` is accepted for reading (RFC 9110 §10.1.1).
    public static let continue100: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The response as bytes.
    ///
    /// - Parameters:
    ///   - closing: the connection closes after this response: adds
    ///     `Connection: close` (RFC 9112 §9.6).
    ///   - requestVersion: an HTTP/1.0 sender that asked for keep-alive must
    ///     see `Connection: keep-alive` to keep the connection (RFC 9112 §9.3).
    ///   - includeBody: false for a HEAD request: same headers, no body
    ///     (RFC 9110 §9.3.2).
    /// The status line always says HTTP/1.1, the highest version the server
    /// supports (RFC 9110 §6.2). 1xx, 204 and 304 get no Content-Length
    /// (RFC 9110 §8.6).
    public func serialize(closing: Bool, requestVersion: HTTPVersion = .http1_1, includeBody: Bool = true) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(128 + body.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        output.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status, to: &output)
        output.append(UInt8(ascii: " "))
        output.append(contentsOf: Self.reasonPhrase(for: status).utf8)
        output.append(contentsOf: "\r\n".utf8)
        for field in headers {
            output.append(contentsOf: field.name.utf8)
            output.append(contentsOf: ": ".utf8)
            output.append(contentsOf: field.value.utf8)
            output.append(contentsOf: "\r\n".utf8)
        }
        let mayHaveContent = !(100...199).contains(status) && status != 204 && status != 304
        if mayHaveContent {
            output.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(body.count, to: &output)
            output.append(contentsOf: "\r\n".utf8)
        }
        if closing {
            output.append(contentsOf: "Connection: close\r\n".utf8)
        } else if requestVersion == .http1_0 {
            output.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        output.append(contentsOf: "\r\n".utf8)
        if includeBody && mayHaveContent { output.append(contentsOf: body) }
        return output
    }

    /// The RFC 9110 §15 reason phrase (informational only: clients ignore it).
    public static func reasonPhrase(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
