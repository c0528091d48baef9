import Testing
@testable import HTTP2

@Suite("HTTP2Library")
struct HTTP2LibraryTests {
    @Test("reports the linked nghttp2 version as dotted numbers")
    func reportsVersion() throws {
        let version = HTTP2Library.nghttp2Version
        let parts = version.split(separator: ".")
        #expect(parts.count == 3, "version \(version)")
        #expect(parts.allSatisfy { Int($0) != nil }, "version \(version)")
        let major = try #require(parts.first.flatMap { Int($0) })
        #expect(major >= 1)
    }
}
