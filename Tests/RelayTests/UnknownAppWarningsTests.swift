import Testing

@testable import Relay

@Suite("Warnings for unknown apps")
struct UnknownAppWarningsTests {
    static let second: UInt64 = 1_000_000_000

    @Test("the first push warns, those within the minute are counted, the next after it tells how many")
    func onceAMinuteWithTheCount() throws {
        var warnings = UnknownAppWarnings()
        let firstWarning = warnings.warning(about: #"app "a""#, now: 5 * Self.second)
        let first = try #require(firstWarning)
        #expect(first.contains(#"a push for app "a", which the relay does not have"#))
        #expect(!first.contains("more pushes"))
        #expect(warnings.warning(about: #"app "b""#, now: 6 * Self.second) == nil)
        #expect(warnings.warning(about: #"app "c""#, now: 64 * Self.second) == nil)
        let nextWarning = warnings.warning(about: #"app "d""#, now: 65 * Self.second)
        let next = try #require(nextWarning)
        #expect(next.contains(#"app "d""#))
        #expect(next.hasSuffix("(and 2 more pushes for apps the relay does not have since the last warning)"))
        let quietWarning = warnings.warning(about: #"app "e""#, now: 200 * Self.second)
        let quiet = try #require(quietWarning)
        #expect(!quiet.contains("more pushes"))
    }

    static let names: [(String, String)] = [
        ("toot", "toot"),
        ("line\nbreak", "line?break"),
        (#"quote" and \ "#, #"quote? and ? "#),
        ("ünï", "??n??"),
        (String(repeating: "x", count: 65), String(repeating: "x", count: 64) + "…"),
    ]

    @Test("an id from a URL is logged as printable ASCII, at most 64 bytes", arguments: names)
    func loggableNames(_ example: (String, String)) {
        #expect(loggableName(example.0) == example.1)
    }
}
