import Testing
@testable import RelayCore

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
}
