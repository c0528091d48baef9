import TestSupport
import Testing
@testable import HTTPCore

/// Parses `bytes` in one call.
func parseOnce(_ bytes: [UInt8], limits: HTTP1Limits = HTTP1Limits()) -> HTTP1ParseResult {
    var parser = HTTP1RequestParser(limits: limits)
    return bytes.withUnsafeBytes { parser.parse($0) }
}

/// Feeds `bytes` as a connection would receive them one byte at a time: the
/// growing prefix, until a result other than `.incomplete`.
func parseByteAtATime(_ bytes: [UInt8], limits: HTTP1Limits = HTTP1Limits()) -> HTTP1ParseResult {
    var parser = HTTP1RequestParser(limits: limits)
    var result = HTTP1ParseResult.incomplete(headComplete: false, expectsContinue: false)
    bytes.withUnsafeBytes { all in
        for length in 0...all.count {
            result = parser.parse(UnsafeRawBufferPointer(rebasing: all[0..<length]))
            if case .incomplete = result { continue }
            return
        }
    }
    return result
}

/// Feeds the first `split` bytes, then all of them.
func parseSplit(_ bytes: [UInt8], at split: Int, limits: HTTP1Limits = HTTP1Limits()) -> HTTP1ParseResult {
    var parser = HTTP1RequestParser(limits: limits)
    return bytes.withUnsafeBytes { all in
        let first = parser.parse(UnsafeRawBufferPointer(rebasing: all[0..<split]))
        if case .incomplete = first { return parser.parse(all) }
        return first
    }
}

struct ValidCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: [UInt8]
    var method: String
    var target: String
    var version: HTTPVersion
    var headers: [(String, String)]
    var body: String
    var keepAlive: Bool
    var testDescription: String { name }

    init(_ name: String, _ raw: String, _ method: String, _ target: String, _ version: HTTPVersion = .http1_1,
         headers: [(String, String)], body: String = "", keepAlive: Bool = true) {
        self.init(name, Array(raw.utf8), method, target, version, headers: headers, body: body, keepAlive: keepAlive)
    }

    init(_ name: String, _ raw: [UInt8], _ method: String, _ target: String, _ version: HTTPVersion = .http1_1,
         headers: [(String, String)], body: String = "", keepAlive: Bool = true) {
        self.name = name
        self.raw = raw
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }

    var expected: HTTP1ParseResult {
        .complete(
            HTTP1Request(method: method, target: target, version: version, headers: HTTPHeaders(headers),
                         body: Array(body.utf8), keepAlive: keepAlive),
            consumed: raw.count)
    }
}

struct InvalidCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: [UInt8]
    var status: Int
    var testDescription: String { "\(name) → \(status)" }

    init(_ name: String, _ raw: String, _ status: Int) {
        self.init(name, Array(raw.utf8), status)
    }

    init(_ name: String, _ raw: [UInt8], _ status: Int) {
        self.name = name
        self.raw = raw
        self.status = status
    }
}

struct HTTP1RequestParserTests {
    static let valid: [ValidCase] = [
        ValidCase("simple GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "/", headers: [("host", "a")]),
        ValidCase(
            "POST with Content-Length",
            "POST /relay-to/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", "POST", "/relay-to/x",
            headers: [("host", "a"), ("content-length", "5")], body: "hello"),
        ValidCase(
            "leading empty lines are ignored", "\r\n\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "/",
            headers: [("host", "a")]),
        ValidCase("bare LF line endings", "GET /x HTTP/1.1\nHost: a\n\n", "GET", "/x", headers: [("host", "a")]),
        ValidCase("HTTP/1.0 closes by default", "GET / HTTP/1.0\r\n\r\n", "GET", "/", .http1_0, headers: [],
                  keepAlive: false),
        ValidCase(
            "HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", "GET", "/", .http1_0,
            headers: [("connection", "Keep-Alive")]),
        ValidCase(
            "HTTP/1.0 keep-alive overridden by close", "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
            "GET", "/", .http1_0, headers: [("connection", "keep-alive, close")], keepAlive: false),
        ValidCase(
            "HTTP/1.1 Connection: close in a list", "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade ,Close\r\n\r\n",
            "GET", "/", headers: [("host", "a"), ("connection", "upgrade ,Close")], keepAlive: false),
        ValidCase(
            "chunked with extensions and trailers",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6 ; ext=\"1\"\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
            "POST", "/", headers: [("host", "a"), ("transfer-encoding", "chunked")], body: "hello world"),
        ValidCase(
            "chunked with uppercase hex, leading zeros and a case-insensitive coding",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n00A\r\n0123456789\r\n000\r\n\r\n",
            "POST", "/", headers: [("host", "a"), ("transfer-encoding", "Chunked")], body: "0123456789"),
        ValidCase(
            "chunked with bare LF", "POST / HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n",
            "POST", "/", headers: [("host", "a"), ("transfer-encoding", "chunked")], body: "abc"),
        ValidCase(
            "repeated agreeing Content-Length fields",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", "POST", "/",
            headers: [("host", "a"), ("content-length", "3"), ("content-length", "3")], body: "abc"),
        ValidCase(
            "agreeing Content-Length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3 , 3\r\n\r\nabc",
            "POST", "/", headers: [("host", "a"), ("content-length", "3 , 3")], body: "abc"),
        ValidCase(
            "Content-Length with leading zeros", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 003\r\n\r\nabc",
            "POST", "/", headers: [("host", "a"), ("content-length", "003")], body: "abc"),
        ValidCase(
            "Content-Length zero", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", "POST", "/",
            headers: [("host", "a"), ("content-length", "0")]),
        ValidCase(
            "names lowercased, order kept, values trimmed, empty value",
            "GET / HTTP/1.1\r\nX-B: 2\r\nHost: a\r\nx-a:   spaced  out \t\r\nX-B:3\r\nX-Empty:\r\n\r\n", "GET", "/",
            headers: [("x-b", "2"), ("host", "a"), ("x-a", "spaced  out"), ("x-b", "3"), ("x-empty", "")]),
        ValidCase(
            "UTF-8 in a header value",
            Array("GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf".utf8) + [0xC3, 0xA9] + Array("\r\n\r\n".utf8), "GET", "/",
            headers: [("host", "a"), ("x-name", "café")]),
        ValidCase(
            "Expect: 100-continue with the body already there",
            "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", "POST", "/",
            headers: [("host", "a"), ("expect", "100-continue"), ("content-length", "2")], body: "hi"),
        ValidCase(
            "absolute-form target is passed through", "GET http://a/relay-to/_health?x=1 HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET", "http://a/relay-to/_health?x=1", headers: [("host", "a")]),
        ValidCase("other methods are tokens", "M-SEARCH * HTTP/1.1\r\nHost: a\r\n\r\n", "M-SEARCH", "*",
                  headers: [("host", "a")]),
    ]

    static let invalid: [InvalidCase] = [
        InvalidCase("double space in request line", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("trailing space after version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400),
        InvalidCase("missing version", "GET /\r\nHost: a\r\n\r\n", 400),
        InvalidCase("method only", "GET\r\n\r\n", 400),
        InvalidCase("lowercase HTTP name", "GET / http/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("version with extra digit", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400),
        InvalidCase("method with a separator", "GE(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("NUL in the target", "GET /a\u{0}b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("tab in the target", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("DEL in the target", "GET /a\u{7F}b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("CR inside the request line", "GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        InvalidCase("HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        InvalidCase("HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505),
        InvalidCase("HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", 505),
        InvalidCase("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400),
        InvalidCase("HTTP/1.1 with two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        InvalidCase("whitespace before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        InvalidCase("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400),
        InvalidCase("obs-fold on the first field", "GET / HTTP/1.1\r\n\tHost: a\r\n\r\n", 400),
        InvalidCase("empty field name", "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", 400),
        InvalidCase("field without colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A\r\n\r\n", 400),
        InvalidCase("separator in field name", "GET / HTTP/1.1\r\nHost: a\r\nX(A): b\r\n\r\n", 400),
        InvalidCase("NUL in a field value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\u{0}c\r\n\r\n", 400),
        InvalidCase("bare CR in a field value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n", 400),
        InvalidCase("DEL in a field value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\u{7F}\r\n\r\n", 400),
        InvalidCase("escape in a field value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: \u{1B}[31m\r\n\r\n", 400),
        InvalidCase("non-numeric Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", 400),
        InvalidCase("negative Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
        InvalidCase("signed Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx", 400),
        InvalidCase("empty Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400),
        InvalidCase("hex Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x1\r\n\r\n", 400),
        InvalidCase(
            "conflicting Content-Length fields",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
        InvalidCase("conflicting Content-Length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 4\r\n\r\n", 400),
        InvalidCase("empty Content-Length list element", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3,\r\n\r\n", 400),
        InvalidCase(
            "Content-Length and Transfer-Encoding",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            400),
        InvalidCase("gzip transfer coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        InvalidCase(
            "gzip then chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        InvalidCase(
            "chunked then identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 501),
        InvalidCase(
            "chunked twice",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        InvalidCase("empty Transfer-Encoding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n", 400),
        InvalidCase(
            "Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        InvalidCase(
            "chunk size not hex", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        InvalidCase(
            "chunk size missing", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n;ext\r\n", 400),
        InvalidCase(
            "garbage after chunk size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\n", 400),
        InvalidCase(
            "chunk data longer than its size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n", 400),
        InvalidCase(
            "control character in a trailer",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: a\u{0}\r\n\r\n", 400),
        InvalidCase(
            "chunk size over the body cap",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2001\r\n", 413),
        InvalidCase(
            "chunk size that would overflow",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFFFFFF\r\n", 413),
        InvalidCase(
            "Content-Length that would overflow",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 999999999999999999999999999\r\n\r\n", 413),
        InvalidCase("Content-Length over the cap", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 8193\r\n\r\n", 413),
    ]

    @Test("parses valid requests in one call", arguments: valid)
    func parsesValid(_ testCase: ValidCase) {
        #expect(parseOnce(testCase.raw) == testCase.expected)
    }

    @Test("refuses invalid requests with the right status", arguments: invalid)
    func refusesInvalid(_ testCase: InvalidCase) {
        let result = parseOnce(testCase.raw)
        guard case .invalid(let error) = result else {
            Issue.record("expected \(testCase.status), got \(result)")
            return
        }
        #expect(error.status == testCase.status, "\(error.reason)")
        #expect(!error.reason.isEmpty && !error.reason.contains("\n"))
    }

    @Test("gives the same result whatever the split and one byte at a time", arguments: valid.map(\.raw) + invalid.map(\.raw))
    func splitsAgree(_ raw: [UInt8]) {
        let whole = parseOnce(raw)
        #expect(parseByteAtATime(raw) == whole)
        for split in 0...raw.count {
            let result = parseSplit(raw, at: split)
            #expect(result == whole, "split at \(split)")
            if result != whole { break }
        }
    }

    @Test("answers pipelined requests in order and keeps the rest")
    func pipelined() throws {
        let first = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n"
        let second = "POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
        let third = "POST /three HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"
        let partial = "GET /four HTTP/1.1\r\nHo"
        var buffer = Array((first + second + third + partial).utf8)
        var parser = HTTP1RequestParser()
        var targets: [String] = []
        var bodies: [String] = []
        for _ in 0..<4 {
            let result = buffer.withUnsafeBytes { parser.parse($0) }
            guard case .complete(let request, let consumed) = result else {
                #expect(result == .incomplete(headComplete: false, expectsContinue: false))
                break
            }
            targets.append(request.target)
            bodies.append(String(decoding: request.body, as: UTF8.self))
            buffer.removeFirst(consumed)
        }
        #expect(targets == ["/one", "/two", "/three"])
        #expect(bodies == ["", "abc", "xy"])
        #expect(buffer == Array(partial.utf8))
        buffer += Array("st: a\r\n\r\n".utf8)
        let last = buffer.withUnsafeBytes { parser.parse($0) }
        guard case .complete(let request, let consumed) = last else {
            Issue.record("expected the fourth request, got \(last)")
            return
        }
        #expect(request.target == "/four")
        #expect(consumed == buffer.count)
    }

    @Test("finds every line end whatever its offset in the eight-byte scan", arguments: 0..<24)
    func lineEndsAtEveryOffset(padding: Int) throws {
        let value = String(repeating: "v", count: padding)
        var text = "GET /\(value) HTTP/1.1\r\nHost: a\r\n"
        for length in 0..<20 { text += "X-\(length): \(String(repeating: "w", count: length))\(length % 2 == 0 ? "\r\n" : "\n")" }
        let raw = Array((text + "X-Last: \(value)\n\r\n").utf8)
        guard case .complete(let request, let consumed) = parseOnce(raw) else {
            Issue.record("expected a request")
            return
        }
        #expect(consumed == raw.count)
        #expect(request.target == "/" + value)
        #expect(request.headers.count == 22)
        #expect(request.headers["x-19"] == String(repeating: "w", count: 19))
        #expect(request.headers["x-last"] == value)
        #expect(parseByteAtATime(raw) == parseOnce(raw))
    }

    @Test("the word-at-a-time control character scan agrees with the byte rule", arguments: [
        // Allowed bytes only: visible ASCII, SP, HTAB, obs-text.
        Array("plain value with spaces and\ttabs, and more than eight bytes".utf8),
        Array("caf\u{E9} \u{1F3BA}".utf8) + [0x80, 0xFF, 0xA0],
        [], Array("\t".utf8), Array(repeating: 0x20, count: 17), Array(repeating: 0x7E, count: 9),
    ])
    func controlScanAllowed(bytes: [UInt8]) {
        #expect(!bytes.withUnsafeBytes(containsControlCharacter))
        // One forbidden byte at every position is found.
        for forbidden: UInt8 in [0x00, 0x01, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F] {
            for position in 0...bytes.count {
                var probe = bytes
                probe.insert(forbidden, at: position)
                #expect(probe.withUnsafeBytes(containsControlCharacter), "byte \(forbidden) at \(position)")
            }
        }
    }

    @Test("the word-at-a-time control character scan agrees with the byte rule on random bytes")
    func controlScanRandom() {
        var random = SeededGenerator(seed: 7)
        for length in 0..<64 {
            for _ in 0..<50 {
                // Mostly harmless bytes, some controls, DEL, tabs and high bytes.
                let bytes = random.bytes(length).map { byte -> UInt8 in
                    switch byte % 16 {
                    case 0: byte % 0x20
                    case 1: 0x7F
                    case 2: UInt8(ascii: "\t")
                    case 3: byte | 0x80
                    default: 0x20 + byte % 0x5F
                    }
                }
                let expected = bytes.contains { ($0 < 0x20 && $0 != UInt8(ascii: "\t")) || $0 == 0x7F }
                #expect(bytes.withUnsafeBytes(containsControlCharacter) == expected, "\(bytes)")
            }
        }
    }

    @Test("reports Expect: 100-continue only once the head is in and the body is not")
    func expectContinue() {
        let head = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n"
        let raw = Array((head + "body").utf8)
        let headCount = head.utf8.count
        #expect(parseOnce(Array(raw[0..<(headCount - 1)])) == .incomplete(headComplete: false, expectsContinue: false))
        #expect(parseOnce(Array(raw[0..<headCount])) == .incomplete(headComplete: true, expectsContinue: true))
        #expect(parseOnce(Array(raw[0..<(headCount + 3)])) == .incomplete(headComplete: true, expectsContinue: true))
        guard case .complete = parseOnce(raw) else {
            Issue.record("expected a complete request")
            return
        }
        let chunkedHead = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(parseOnce(Array((chunkedHead + "4\r\nab").utf8)) == .incomplete(headComplete: true, expectsContinue: true))
        // RFC 9110 §10.1.1: ignored for HTTP/1.0.
        let http10 = "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
        #expect(parseOnce(Array(http10.utf8)) == .incomplete(headComplete: true, expectsContinue: false))
        // Refused bodies are refused at once, which is the point of 100-continue.
        let tooLarge = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 9000\r\n\r\n"
        #expect(status(parseOnce(Array(tooLarge.utf8))) == 413)
    }

    @Test("says when the head is complete: from its empty line on, whatever the framing, not before", arguments: [
        ("GET / HTTP/1.1\r\nHost: a\r\n", false),
        ("GET / HTTP/1.1\r\nHost: a\r\n\r", false),
        ("\r\n\nPOST / HTTP/1.1\r\nHost: a\r\n", false),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n", true),
        ("POST / HTTP/1.1\nHost: a\nContent-Length: 4\n\nab", true),
        ("\r\n\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\na", true),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", true),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab", true),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: v\r\n", true),
    ])
    func headComplete(input: String, complete: Bool) {
        let bytes = Array(input.utf8)
        #expect(parseOnce(bytes) == .incomplete(headComplete: complete, expectsContinue: false))
        #expect(parseByteAtATime(bytes) == .incomplete(headComplete: complete, expectsContinue: false))
    }

    // MARK: Limits

    /// A request whose head is exactly `headBytes` long.
    static func request(headBytes: Int, body: String = "") -> [UInt8] {
        let start = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(body.utf8.count)\r\nX-Pad: "
        let end = "\r\n\r\n"
        let padding = headBytes - start.utf8.count - end.utf8.count
        return Array((start + String(repeating: "p", count: padding) + end + body).utf8)
    }

    @Test("accepts a head of exactly the cap, refuses one byte more with 431")
    func headCap() {
        let limits = HTTP1Limits()
        #expect(isComplete(parseOnce(Self.request(headBytes: limits.maxHeaderBytes, body: "abc"))))
        #expect(isComplete(parseByteAtATime(Self.request(headBytes: limits.maxHeaderBytes, body: "abc"))))
        #expect(status(parseOnce(Self.request(headBytes: limits.maxHeaderBytes + 1))) == 431)
        #expect(status(parseByteAtATime(Self.request(headBytes: limits.maxHeaderBytes + 1))) == 431)
    }

    @Test("refuses an unterminated head as soon as it cannot fit")
    func unterminatedHead() {
        let limits = HTTP1Limits()
        let start = Array("GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ".utf8)
        let almost = start + [UInt8](repeating: UInt8(ascii: "p"), count: limits.maxHeaderBytes - 1 - start.count)
        #expect(parseOnce(almost) == .incomplete(headComplete: false, expectsContinue: false))
        #expect(status(parseOnce(almost + [UInt8(ascii: "p")])) == 431)
        let longLine = Array("GET /".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: limits.maxHeaderBytes)
        #expect(status(parseOnce(longLine)) == 414)
    }

    @Test("accepts exactly the maximum header count, refuses one more with 431")
    func headerCount() {
        func request(fields: Int) -> [UInt8] {
            var text = "GET / HTTP/1.1\r\nHost: a\r\n"
            for index in 1..<fields { text += "X-\(index): v\r\n" }
            return Array((text + "\r\n").utf8)
        }
        #expect(isComplete(parseOnce(request(fields: 100))))
        #expect(status(parseOnce(request(fields: 101))) == 431)
        #expect(status(parseByteAtATime(request(fields: 101))) == 431)
    }

    @Test("accepts a Content-Length body of exactly the cap, refuses one more with 413 before it arrives")
    func contentLengthCap() {
        let atCap = String(repeating: "b", count: 8192)
        #expect(isComplete(parseOnce(Self.request(headBytes: 100, body: atCap))))
        let over = Self.request(headBytes: 100, body: atCap + "b")
        #expect(status(parseOnce(Array(over[0..<100]))) == 413)
    }

    @Test("accepts a chunked body of exactly the cap, refuses one more byte with 413")
    func chunkedCap() {
        func chunked(_ chunkSizes: [Int]) -> [UInt8] {
            var text = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            for size in chunkSizes {
                text += String(size, radix: 16) + "\r\n" + String(repeating: "c", count: size) + "\r\n"
            }
            return Array((text + "0\r\n\r\n").utf8)
        }
        guard case .complete(let request, _) = parseOnce(chunked([4096, 4096])) else {
            Issue.record("expected a complete request")
            return
        }
        #expect(request.body.count == 8192)
        #expect(status(parseOnce(chunked([4096, 4097]))) == 413)
        #expect(status(parseOnce(chunked([8193]))) == 413)
        #expect(status(parseByteAtATime(chunked([4096, 4096, 1]))) == 413)
    }

    @Test("bounds chunked framing overhead and trailers")
    func chunkedOverhead() {
        let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        let manyTinyChunks = head + String(repeating: "1\r\nx\r\n", count: 8000) + "0\r\n\r\n"
        #expect(status(parseOnce(Array(manyTinyChunks.utf8))) == 413)
        let hugeTrailers = head + "0\r\n" + String(repeating: "X-T: vvvvvvvvvvvvvvv\r\n", count: 1000)
        #expect(status(parseOnce(Array(hugeTrailers.utf8))) == 413)
        let longExtension = head + "1;" + String(repeating: "e", count: 2000)
        #expect(status(parseOnce(Array(longExtension.utf8))) == 400)
    }

    @Test("reset abandons a partial request; a shorter buffer restarts")
    func resetting() {
        var parser = HTTP1RequestParser()
        let partial = Array("POST /a HTTP/1.1\r\nHost: a\r\nContent-Len".utf8)
        #expect(partial.withUnsafeBytes { parser.parse($0) } == .incomplete(headComplete: false, expectsContinue: false))
        parser.reset()
        let fresh = Array("GET /b HTTP/1.1\r\nHost: b\r\n\r\n".utf8)
        guard case .complete(let request, _) = fresh.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("expected a complete request after reset")
            return
        }
        #expect(request.target == "/b")
        let short = Array("GET /c HTTP/1.1\r\nHost: c\r\n\r\n".utf8)
        #expect(partial.withUnsafeBytes { parser.parse($0) } == .incomplete(headComplete: false, expectsContinue: false))
        guard case .complete(let other, _) = short.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("expected a complete request after a shorter buffer")
            return
        }
        #expect(other.target == "/c")
    }
}

func status(_ result: HTTP1ParseResult) -> Int? {
    if case .invalid(let error) = result { return error.status }
    return nil
}

func isComplete(_ result: HTTP1ParseResult) -> Bool {
    if case .complete = result { return true }
    return false
}

struct HTTP1ParserExtremeLimitTests {
    @Test("does not overflow chunk sizes with an unlimited body cap")
    func unlimitedBody() {
        let limits = HTTP1Limits(maxHeaderBytes: 16384, maxBodyBytes: Int.max, maxHeaderCount: 100)
        let raw = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "F", count: 40)
            + "\r\n"
        #expect(status(parseOnce(Array(raw.utf8), limits: limits)) == 413)
    }
}
