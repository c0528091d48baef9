import Testing
@testable import AppsFile

/// Files built to hurt: each is an error (or, at a limit, a success), never
/// a crash, a hang or unbounded memory.
struct HostileInputTests {
    func parse(_ text: String) throws(AppsFileError) -> [AppDefinition] {
        try AppsFile.parse(text, file: "apps.toml", environment: ["SET": "value"]).apps
    }

    func error(_ text: String) -> AppsFileError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test("a file of exactly 1 MiB is read; one byte more is refused before parsing")
    func sizeLimit() throws {
        let app = p12App()
        let padded = app + String(repeating: "#", count: AppsFileLimits.fileBytes - app.utf8.count)
        #expect(try parse(padded).map(\.id) == ["toot"])
        #expect(error(padded + "#")?.message == "is 1048577 bytes long; at most 1048576 (1 MiB)")
    }

    @Test("1000 apps are read; 1001 or a hundred thousand are refused before any is read")
    func appLimit() throws {
        let thousand = (1...AppsFileLimits.apps).map { p12App("app\($0)", "topic = \"com.example.app\($0)\"") }.joined()
        #expect(try parse(thousand).count == 1000)
        #expect(error(thousand + p12App("one-more"))?.description == "apps.toml: key \"app\": 1001 apps; at most 1000")
        let many = String(repeating: "[[app]]\n", count: 100_000)
        #expect(error(many)?.description == "apps.toml: key \"app\": 100000 apps; at most 1000")
    }

    /// toml++ refuses values nested deeper than 256 (TOML_MAX_NESTED_VALUES)
    /// while parsing, with the place; tables nested by dotted keys or
    /// headers are not values, and the reader never descends into them.
    static let deepFiles: [(String, String)] = [
        ("a = " + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000),
         "apps.toml:1:261: Error while parsing value: exceeded maximum nested value depth of 256 (TOML_MAX_NESTED_VALUES)"),
        (p12App("toot", "environments = " + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)),
         "apps.toml:4:272: Error while parsing value: exceeded maximum nested value depth of 256 (TOML_MAX_NESTED_VALUES)"),
        ("a = " + String(repeating: "{b=", count: 10_000) + "1" + String(repeating: "}", count: 10_000),
         "apps.toml:1:773: Error while parsing value: exceeded maximum nested value depth of 256 (TOML_MAX_NESTED_VALUES)"),
        ("[" + Array(repeating: "a", count: 10_000).joined(separator: ".") + "]\nx = 1\n",
         "apps.toml: key \"a\": unknown key; the file holds [[app]] and [[api-key]] tables only"),
        (p12App("toot", "[app." + Array(repeating: "production", count: 10_000).joined(separator: ".") + "]"),
         "apps.toml: app \"toot\", key \"production.production\": only credential keys can be set per environment: p12-file, p12-base64, p8-file, p8, p12-password, key-id, team-id"),
        (p12App("toot", Array(repeating: "a", count: 10_000).joined(separator: ".") + " = 1"),
         "apps.toml: app \"toot\", key \"a\": unknown key; an app's keys are alert, alert-loc-key, default, environments, fcm-credentials, id, key-id, p12-base64, p12-file, p12-password, p8, p8-file, restricted-only, retired, team-id, topic, [app.production], [app.development]"),
    ]

    @Test("nesting 10,000 deep is a syntax error or an unknown key, not a stack overflow", arguments: deepFiles)
    func deepNesting(text: String, expected: String) {
        #expect(error(text)?.description == expected)
    }

    @Test("huge tables and arrays are refused at their first bad entry")
    func wideInput() {
        let keys = (0..<60_000).map { "k\($0) = 1" }.joined(separator: "\n")
        #expect(error(keys)?.key == "k0")
        let environments = p12App("toot", "environments = [\"production\"" + String(repeating: ", 1", count: 200_000) + "]")
        #expect(error(environments)?.description
            == "apps.toml: app \"toot\", key \"environments\": must be an array of strings, not an integer")
    }

    /// The caller decodes the file with String(decoding:as: UTF8.self),
    /// which makes every byte that is not UTF-8 a U+FFFD.
    static let badBytes: [([UInt8], String)] = [
        (Array(p12App().utf8) + [0xFF], "apps.toml:4:1: not UTF-8 (or U+FFFD, the replacement character, which the file may not hold)"),
        ([0xC3] + Array(p12App().utf8), "apps.toml:1:1: not UTF-8 (or U+FFFD, the replacement character, which the file may not hold)"),
        (Array("[[app]]\nid = \"to".utf8) + [0xED, 0xA0, 0x80] + Array("ot\"\n".utf8),
         "apps.toml:2:9: not UTF-8 (or U+FFFD, the replacement character, which the file may not hold)"),
        ([0] + Array(p12App().utf8), "apps.toml:1:1: a NUL character (U+0000); the file must be text"),
        (Array(p12App().utf8) + [0, 0x41], "apps.toml:4:1: a NUL character (U+0000); the file must be text"),
    ]

    @Test("bytes that are not UTF-8 and NUL bytes are refused with their place", arguments: badBytes)
    func bytes(bytes: [UInt8], expected: String) {
        #expect(error(String(decoding: bytes, as: UTF8.self))?.description == expected)
    }

    @Test("a byte-order mark and CRLF line ends are TOML like any other")
    func byteOrderMarkAndCRLF() throws {
        let text = "\u{FEFF}" + p12App("toot", "topic = \"cx.c3.toot\"").replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try parse(text).map(\.topic) == ["cx.c3.toot"])
    }

    /// toml++ 3.4.0 asserts (aborting the process, release builds too) on
    /// a table header whose key starts with anything but a bare-key
    /// character or a quote, and on an array whose first value starts with
    /// `}` or a Unicode line end, and on a date followed by a space and one
    /// digit; the fuzzer found `[[[app]]`, `[}`, `[ "a", }]` and
    /// `=1978-05-2\u{10} 4`.
    static let textTOMLPlusPlusAssertsOn: [(String, String)] = [
        ("[[[app]]\n", "apps.toml:1:3: a table header must start with a key, such as [app.production] or [[app]]"),
        (p12App() + "[=]\n", "apps.toml:4:2: a table header must start with a key, such as [app.production] or [[app]]"),
        (p12App() + "  [[ .development]]\n", "apps.toml:4:6: a table header must start with a key, such as [app.production] or [[app]]"),
        (p12App() + "[\té]\n", "apps.toml:4:3: a table header must start with a key, such as [app.production] or [[app]]"),
        ("[\n", "apps.toml:1:2: a table header must start with a key, such as [app.production] or [[app]]"),
        ("\u{FEFF}[#]\n", "apps.toml:1:2: a table header must start with a key, such as [app.production] or [[app]]"),
        ("a = [}\n", "apps.toml:1:6: a value or \"]\" must follow \"[\" in an array, not \"}\""),
        (p12App("toot", "environments = [ # none\n  }"), "apps.toml:5:3: a value or \"]\" must follow \"[\" in an array, not \"}\""),
        (p12App("toot", "environments = [\"production\", }]"), "apps.toml:4:31: a value or \"]\" must follow \",\" in an array, not \"}\""),
        ("a = [\u{2028}]\n", "apps.toml:1:6: a Unicode line end (U+2028) the file may not hold"),
        (p12App("toot", "alert = \"a\u{85}b\""), "apps.toml:4:11: a Unicode line end (U+0085) the file may not hold"),
        ("a = 1979-05-27 4\n", "apps.toml:1:16: a date, a space and one digit: write a time in full, such as 1979-05-27 07:32:00"),
        (p12App("toot", "environments = [1979-05-27 4]"), "apps.toml:4:28: a date, a space and one digit: write a time in full, such as 1979-05-27 07:32:00"),
        // What toml++ reports itself is left to it.
        ("[ [app]]\n", "apps.toml:1:3: Error while parsing table header: [[array-of-table]] brackets must be contiguous (i.e. [ [ this ] ] is prohibited)"),
        ("[]\n", "apps.toml:1:2: Error while parsing table header: tables with blank bare keys are explicitly prohibited"),
    ]

    @Test("text toml++ would assert on is a syntax error with its place", arguments: textTOMLPlusPlusAssertsOn)
    func tableHeaders(text: String, expected: String) {
        #expect(error(text)?.description == expected)
    }

    @Test("a header that starts with a quoted key is still read")
    func quotedHeader() throws {
        let text = p12App("toot", "[ \"app\".\"development\" ]", "p12-file = \"/dev.p12\"")
        #expect(try parse(text).first?.credentials[.development] == .p12File(path: "/dev.p12", password: ""))
    }
}
