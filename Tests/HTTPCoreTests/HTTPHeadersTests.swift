import Testing
@testable import HTTPCore

struct HTTPHeadersTests {
    let headers = HTTPHeaders([
        ("Content-Type", "text/plain"), ("X-Dup", "1"), ("x-dup", "2"), ("Connection", "Keep-Alive, Upgrade"),
    ])

    @Test("lowercases names and keeps order")
    func order() {
        #expect(headers.map(\.name) == ["content-type", "x-dup", "x-dup", "connection"])
        #expect(headers.count == 4)
    }

    @Test("looks names up case-insensitively: first value, all values, count")
    func lookups() {
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["x-dup"] == "1")
        #expect(headers["missing"] == nil)
        #expect(headers.values(for: "X-Dup") == ["1", "2"])
        #expect(headers.values(for: "missing").isEmpty)
        #expect(headers.count(of: "X-DUP") == 2)
        #expect(headers.count(of: "missing") == 0)
    }

    @Test("finds tokens in comma-separated values")
    func tokens() {
        #expect(headers.containsToken("keep-alive", in: "connection"))
        #expect(headers.containsToken("UPGRADE", in: "Connection"))
        #expect(!headers.containsToken("close", in: "connection"))
        #expect(!headers.containsToken("keep", in: "connection"))
    }

    @Test("builds from a dictionary literal")
    func literal() {
        let literal: HTTPHeaders = ["TTL": "60", "Urgency": "low"]
        #expect(literal["ttl"] == "60")
        #expect(literal["urgency"] == "low")
    }

    @Test("appends with a lowercased name")
    func appending() {
        var copy = headers
        copy.append(name: "X-New", value: "v")
        #expect(copy.last == HTTPField(name: "x-new", value: "v"))
    }

    @Test("lowercases header-name bytes: ASCII letters only, long and short, non-ASCII repaired as UTF-8",
          arguments: [
              ("Content-Type", "content-type"),
              ("X", "x"),
              ("", ""),
              ("A-Very-Long-Header-Name-Beyond-Fifteen-Bytes", "a-very-long-header-name-beyond-fifteen-bytes"),
              ("already-lower-0123456789_~", "already-lower-0123456789_~"),
              ("ÄB", "Äb"),
          ])
    func lowercasesBytes(input: String, expected: String) {
        #expect(asciiLowercased(Array(input.utf8)) == expected)
    }

    @Test("invalid UTF-8 in a name is repaired, not trusted")
    func lowercasesInvalidBytes() {
        #expect(asciiLowercased([0x41, 0xFF]) == "a\u{FFFD}")
    }

    @Test("reads value bytes in place: all values of a name in order, the first, none")
    func valueBytes() {
        #expect(headers.valueBytes(for: "X-DUP").map { Array($0) } == [Array("1".utf8), Array("2".utf8)])
        #expect(headers.firstValueBytes(for: "x-dup").map { Array($0) } == Array("1".utf8))
        #expect(headers.valueBytes(for: "x-dup").first.map { Array($0) } == Array("1".utf8))
        #expect(headers.firstValueBytes(for: "missing") == nil)
        #expect(headers.valueBytes(for: "missing").isEmpty)
        #expect(!headers.valueBytes(for: "connection").isEmpty)
        // A name that is a prefix of another does not match it.
        #expect(headers.valueBytes(for: "x-du").isEmpty)
        #expect(headers.valueBytes(for: "content-typ").isEmpty)
    }

    @Test("fields and positions give Strings; an empty header list is empty")
    func fieldsAsStrings() {
        #expect(headers.fields == [
            HTTPField(name: "content-type", value: "text/plain"), HTTPField(name: "x-dup", value: "1"),
            HTTPField(name: "x-dup", value: "2"), HTTPField(name: "connection", value: "Keep-Alive, Upgrade"),
        ])
        #expect(headers[2] == HTTPField(name: "x-dup", value: "2"))
        #expect(HTTPHeaders().isEmpty)
        #expect(HTTPHeaders().values(for: "x").isEmpty)
    }

    @Test("parsed headers: names lowercased in the copy of the head, values trimmed, bytes kept as received")
    func parsedHeaders() throws {
        let raw = Array("GET / HTTP/1.1\r\nHOST: a\r\nX-Long-Header-Name-Over-15: \t Value With Caps \r\nX-Bin: ".utf8)
            + [0xFF, 0x41] + Array("\r\n\r\n".utf8)
        guard case .complete(let request, _) = parseOnce(raw) else {
            Issue.record("expected a request")
            return
        }
        let parsed = request.headers
        #expect(parsed.map(\.name) == ["host", "x-long-header-name-over-15", "x-bin"])
        #expect(parsed["x-long-header-name-over-15"] == "Value With Caps")
        #expect(try #require(parsed.firstValueBytes(for: "X-BIN")) == [0xFF, 0x41])
        // The String accessors repair invalid UTF-8, as String values did.
        #expect(parsed["x-bin"] == "\u{FFFD}A")
        #expect(parsed == HTTPHeaders([("Host", "a"), ("X-Long-Header-Name-Over-15", "Value With Caps"),
                                       ("X-Bin", "\u{FFFD}A")]))
    }

    @Test("equality compares fields as Strings", arguments: [
        ([("a", "1")], [("A", "1")], true),
        ([("a", "1")], [("a", "2")], false),
        ([("a", "1")], [("b", "1")], false),
        ([("a", "1")], [("a", "1"), ("a", "1")], false),
        ([("a", "caf\u{E9}")], [("a", "cafe\u{301}")], true),
        ([], [], true),
    ] as [([(String, String)], [(String, String)], Bool)])
    func equality(left: [(String, String)], right: [(String, String)], equal: Bool) {
        #expect((HTTPHeaders(left) == HTTPHeaders(right)) == equal)
    }

    @Test("same field value: bytes, or Strings when non-ASCII", arguments: [
        (Array("60".utf8), Array("60".utf8), true),
        (Array("60".utf8), Array("61".utf8), false),
        (Array("60".utf8), Array("600".utf8), false),
        (Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8), true),
        ([0xFF], [0xFE], true),  // both repair to U+FFFD
        ([0xFF], Array("a".utf8), false),
    ] as [([UInt8], [UInt8], Bool)])
    func sameValue(left: [UInt8], right: [UInt8], same: Bool) {
        #expect(sameFieldValue(left, right) == same)
    }

    @Test("ASCII case-insensitive comparison", arguments: [
        ("chunked", "CHUNKED", true), ("Keep-Alive", "keep-alive", true), ("close", "closed", false),
        ("", "", true), ("a", "b", false), ("\u{C4}", "\u{E4}", false),
    ])
    func caseInsensitive(left: String, right: String, equal: Bool) {
        #expect(asciiCaseInsensitiveEquals(left.utf8, right.utf8) == equal)
    }

    @Test("walks list elements like split on commas", arguments: [
        "", "a", "a,b", ",a,,b,", " a , b ", ",", ",,",
    ])
    func listElements(text: String) {
        for omitting in [true, false] {
            var elements: [[UInt8]] = []
            forEachListElement(of: ArraySlice(text.utf8), omittingEmpty: omitting) { elements.append(Array($0)) }
            let expected = text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: omitting).map { Array($0) }
            #expect(elements == expected, "omitting empty: \(omitting)")
        }
    }

    @Test("token bytes are exactly RFC 9110 tchar, for every byte value")
    func tokenBytes() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(isTokenByte(byte) == tchar.contains(byte), "byte \(byte)")
        }
    }
}
