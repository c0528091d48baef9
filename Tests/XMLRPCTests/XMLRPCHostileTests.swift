#if canImport(Glibc)
import Glibc
#endif
import Testing
import XMLRPC

/// A TCP listener on 127.0.0.1, port 0, that is never accepted from: it
/// tells whether anything connected to it.
private final class SilentListener {
    let descriptor: Int32
    let port: Int

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 8) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        descriptor = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        try #require(listener >= 0 && bound)
    }

    /// Whether a connection is waiting.
    var wasConnected: Bool {
        let connection = accept(descriptor, nil, nil)
        guard connection >= 0 else { return false }
        close(connection)
        return true
    }

    deinit { close(descriptor) }
}

/// Runs `body`, returning its result and the seconds it took.
private func timed<T>(_ body: () -> T) -> (T, Double) {
    let clock = ContinuousClock()
    var result: T?
    let duration = clock.measure { result = body() }
    return (result!, Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
}

@Suite("Hostile XML-RPC documents")
struct XMLRPCHostileTests {
    @Test("an external entity on file:///etc/passwd is refused at the DOCTYPE, nothing read")
    func fileEntityIsRefused() {
        let document = """
            <?xml version="1.0"?>
            <!DOCTYPE methodCall [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <methodCall><methodName>feedback</methodName><params><param><value>&xxe;</value></param></params></methodCall>
            """
        let error = decodingError(Array(document.utf8))
        #expect(error == .doctypeRefused)
        #expect(!"\(error!)".contains("root:"))
    }

    @Test("external entities and DTDs on an http URL are refused and never fetched")
    func httpEntityIsNeverFetched() throws {
        let listener = try SilentListener()
        let url = "http://127.0.0.1:\(listener.port)/evil"
        let documents = [
            "<!DOCTYPE methodCall [<!ENTITY xxe SYSTEM \"\(url)\">]><methodCall><methodName>&xxe;</methodName></methodCall>",
            "<!DOCTYPE methodCall SYSTEM \"\(url).dtd\"><methodCall><methodName>a</methodName></methodCall>",
            "<!DOCTYPE methodCall [<!ENTITY % p SYSTEM \"\(url)\"> %p;]><methodCall><methodName>a</methodName></methodCall>",
        ]
        for document in documents {
            #expect(decodingError(Array(document.utf8)) == .doctypeRefused)
        }
        #expect(!listener.wasConnected)
    }

    @Test("billion laughs is refused at once, nothing expanded")
    func billionLaughsIsRefused() {
        var document = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n"
        for level in 1...9 {
            document += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">\n"
        }
        document += "]>\n<methodCall><methodName>&lol9;</methodName></methodCall>\n"
        let (error, seconds) = timed { decodingError(Array(document.utf8)) }
        #expect(error == .doctypeRefused)
        #expect(seconds < 30)  // a guard against a hang, not a speed target (sanitizers, loaded CI)
    }

    @Test("any document type declaration is refused")
    func doctypeIsRefused() {
        #expect(decodingError(Array("<!DOCTYPE methodCall><methodCall><methodName>a</methodName></methodCall>".utf8))
            == .doctypeRefused)
    }

    @Test("an entity reference without a DTD is not well-formed")
    func undeclaredEntityIsMalformed() {
        guard case .malformed = decodingError(callDocument("<value>&xxe;</value>")) else {
            Issue.record("an undeclared entity was taken")
            return
        }
    }

    @Test("10,000 nested arrays are refused quickly, as deeper than the relay's limit")
    func deepNestingIsRefused() {
        let value = String(repeating: "<value><array><data>", count: 10_000) + String(repeating: "</data></array></value>", count: 10_000)
        let (error, seconds) = timed { decodingError(callDocument(value)) }
        // libxml2 stops first, at its own 256 levels; the fault names the relay's 64.
        #expect(error == .tooDeep(line: 6, limit: 64))
        #expect(seconds < 30)  // a guard against a hang, not a speed target
    }

    /// Hostile bodies and the whole text of the error a fault carries: the
    /// relay's words with libxml2's line and column, none of libxml2's.
    static let hostileFaultTexts: [(name: String, bytes: [UInt8], limits: XMLRPCLimits, text: String)] = [
        ("10,000 nested arrays", callDocument(String(repeating: "<value><array><data>", count: 10_000)
            + String(repeating: "</data></array></value>", count: 10_000)), testLimits,
         "the XML-RPC body nests elements deeper than 64 levels (line 6)"),
        ("300 nested elements under a limit above libxml2's", Array((String(repeating: "<a>", count: 300)
            + String(repeating: "</a>", count: 300)).utf8),
         XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 1000, maxElements: 10_000, maxStringBytes: 65_536),
         "the XML-RPC body nests elements deeper than 256 levels (line 1)"),
        ("a name of 50,001 bytes", Array(("<" + String(repeating: "a", count: 50_001) + "/>").utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 2): a name longer than 50000 bytes"),
        ("a comment of 10 MB", Array(("<methodCall><!--" + String(repeating: "x", count: 10_000_001) + "--></methodCall>").utf8),
         XMLRPCLimits(maxBodyBytes: 16 << 20, maxDepth: 64, maxElements: 10_000, maxStringBytes: 65_536),
         "the XML-RPC body is not well-formed XML (line 1, column 10000018): a comment that is not closed or is longer than 10000000 bytes"),
        ("a truncated call", Array(callDocument("<value><string>abc</string></value>").prefix(60)), testLimits,
         "the XML-RPC body is not well-formed XML (line 3, column 26): a broken tag"),
        ("a call never closed", Array("<methodCall><methodName>a</methodName>".utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 39): an element that is never closed (the body ends inside it)"),
        ("a NUL byte", Array("<methodCall><methodName>a\u{0}b</methodName></methodCall>".utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 26): a character XML does not allow, or bytes that are not UTF-8"),
        ("invalid UTF-8", Array("<methodCall><methodName>".utf8) + [0xFF, 0xFE, 0x41] + Array("</methodName></methodCall>".utf8),
         testLimits, "the XML-RPC body is not well-formed XML (line 1, column 25): a character XML does not allow, or bytes that are not UTF-8"),
        ("mismatched tags", Array("<methodCall><methodName>a</methodCall></methodName>".utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 39): an end tag that does not match its start tag"),
        ("two roots", Array("<methodCall><methodName>a</methodName></methodCall><methodCall/>".utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 52): content after the root element"),
        ("no XML at all", Array("secret-token-not-xml".utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 1): no root element: the body does not start with a tag"),
        ("an undeclared entity", callDocument("<value>&xxe;</value>"), testLimits,
         "the XML-RPC body is not well-formed XML (line 6, column 13): an entity other than XML's five (&lt; &gt; &amp; &apos; &quot;)"),
        ("an XML declaration in the middle", Array("<methodCall><?xml version='1.0'?></methodCall>".utf8), testLimits,
         "the XML-RPC body is not well-formed XML (line 1, column 18): an XML declaration that is not at the start of the body"),
    ]

    @Test("a hostile body's fault text is the relay's own, with line and column, never libxml2's",
          arguments: hostileFaultTexts)
    func hostileFaultText(_ example: (name: String, bytes: [UInt8], limits: XMLRPCLimits, text: String)) throws {
        let error = try #require(decodingError(example.bytes, limits: example.limits), "\(example.name) was taken")
        #expect(error.description == example.text, "\(example.name)")
        // libxml2's own words: its option names, its function names, its byte dumps.
        for libxml2Text in ["XML_PARSE", "HUGE", "libxml", "xmlParse", "xmlSAX2", "Bytes:", "0xFF", "Excessive", "secret"] {
            #expect(!error.description.contains(libxml2Text), "\(example.name): \(error.description)")
        }
    }

    @Test("nesting deeper than the limit but within libxml2's is refused by the limit")
    func nestingPastTheLimitIsRefused() {
        let value = String(repeating: "<value><array><data>", count: 30) + String(repeating: "</data></array></value>", count: 30)
        guard case .tooDeep(_, 64) = decodingError(callDocument(value)) else {
            Issue.record("90 levels were taken under a limit of 64")
            return
        }
    }

    @Test("a 10 MB string is refused quickly, whichever cap it meets first")
    func hugeStringIsRefused() {
        let document = callDocument("<value><string>" + String(repeating: "a", count: 10 << 20) + "</string></value>")
        let generous = XMLRPCLimits(maxBodyBytes: 16 << 20, maxDepth: 64, maxElements: 10_000, maxStringBytes: 65_536)
        let (error, seconds) = timed { decodingError(document, limits: generous) }
        #expect(error == .stringTooLong(line: 6, limit: 65_536))
        #expect(seconds < 30)  // a guard against a hang, not a speed target
        #expect(decodingError(document) == .bodyTooLarge(bytes: document.count, limit: 1 << 20))
    }

    @Test("a text just past the string limit is refused, one at the limit taken")
    func stringLimitIsExact() throws {
        let limits = XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 64, maxElements: 100, maxStringBytes: 1000)
        let atLimit = callDocument("<value><string>" + String(repeating: "é", count: 500) + "</string></value>")
        #expect(try decodeXMLRPCCall(atLimit, limits: limits).params == [.string(String(repeating: "é", count: 500))])
        let past = callDocument("<value><string>" + String(repeating: "a", count: 1001) + "</string></value>")
        guard case .stringTooLong(_, 1000) = decodingError(past, limits: limits) else {
            Issue.record("a 1001-byte string was taken under a limit of 1000")
            return
        }
        // Split by a comment, the parts still count as one text.
        let split = callDocument("<value><string>" + String(repeating: "a", count: 600) + "<!---->"
            + String(repeating: "a", count: 600) + "</string></value>")
        guard case .stringTooLong = decodingError(split, limits: limits) else {
            Issue.record("a string split by a comment escaped the limit")
            return
        }
    }

    @Test("more elements than the limit are refused")
    func tooManyElementsAreRefused() {
        let limits = XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 64, maxElements: 100, maxStringBytes: 1000)
        let value = "<value><array><data>" + String(repeating: "<value><int>1</int></value>", count: 50) + "</data></array></value>"
        #expect(decodingError(callDocument(value), limits: limits) == .tooManyElements(limit: 100))
    }

    static let malformedDocuments: [(name: String, bytes: [UInt8])] = [
        ("a NUL byte", Array("<methodCall><methodName>a\u{0}b</methodName></methodCall>".utf8)),
        ("invalid UTF-8", Array("<methodCall><methodName>".utf8) + [0xFF, 0xFE, 0x41] + Array("</methodName></methodCall>".utf8)),
        ("a truncated call", Array(callDocument("<value><string>abc</string></value>").prefix(60))),
        ("mismatched tags", Array("<methodCall><methodName>a</methodCall></methodName>".utf8)),
        ("two roots", Array("<methodCall><methodName>a</methodName></methodCall><methodCall/>".utf8)),
        ("no XML at all", Array("secret-token-not-xml".utf8)),
    ]

    @Test("broken documents are not well-formed, with a one-line reason that quotes nothing of the body",
          arguments: malformedDocuments)
    func brokenDocumentIsMalformed(_ example: (name: String, bytes: [UInt8])) {
        guard case .malformed(_, _, let reason)? = decodingError(example.bytes) else {
            Issue.record("\(example.name) was not refused as malformed")
            return
        }
        #expect(!reason.isEmpty)
        #expect(!reason.contains("\n"))
        #expect(!reason.contains("0xFF"))
        #expect(!reason.contains("secret"))
    }

    @Test("an empty body is refused")
    func emptyBodyIsRefused() {
        #expect(decodingError([]) == .emptyBody)
    }

    @Test("every error describes itself in one line")
    func descriptionsAreOneLine() {
        let errors: [XMLRPCError] = [
            .bodyTooLarge(bytes: 2, limit: 1), .emptyBody, .doctypeRefused, .malformed(line: 1, column: 2, reason: "r"),
            .tooDeep(line: 1, limit: 2), .tooManyElements(limit: 3), .stringTooLong(line: 1, limit: 4),
            .notXMLRPC(line: 1, reason: "r"), .invalidValue(line: 1, type: "int", reason: "r"),
        ]
        for error in errors {
            #expect(!error.description.isEmpty && !error.description.contains("\n"))
        }
    }
}
