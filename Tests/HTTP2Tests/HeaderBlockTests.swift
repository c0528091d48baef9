import Testing
@testable import HTTP2

@Suite("HeaderBlock")
struct HeaderBlockTests {
    @Test("fields are packed in order into one buffer")
    func packsFields() throws {
        var block = HeaderBlock()
        try block.appendPseudo(":method", "POST")
        try block.appendRegular(name: "apns-topic", value: "cx.c3.toot")
        #expect(block.fields.count == 2)
        let decoded = block.fields.map { field in
            (String(decoding: block.bytes[field.nameStart..<field.nameStart + field.nameCount], as: UTF8.self),
             String(decoding: block.bytes[field.valueStart..<field.valueStart + field.valueCount], as: UTF8.self))
        }
        #expect(decoded.map { "\($0.0)=\($0.1)" } == [":method=POST", "apns-topic=cx.c3.toot"])
    }

    @Test("field names must be lowercase tokens (RFC 9113 §8.2.1)", arguments: [
        ("apns-topic", true), ("x_a.b~c!", true), ("0", true),
        ("", false), ("Apns-Topic", false), ("a b", false), ("a:b", false), (":path", false), ("é", false),
    ])
    func names(name: String, valid: Bool) {
        #expect(HeaderBlock.isValidName(name.utf8) == valid)
    }

    @Test("field values must not hold NUL, CR or LF nor start or end with whitespace", arguments: [
        ("", true), ("a b", true), ("🎺", true), ("a\tb", true),
        (" a", false), ("a ", false), ("\ta", false), ("a\r\nb", false), ("a\nb", false), ("a\u{0}b", false),
    ])
    func values(value: String, valid: Bool) {
        #expect(HeaderBlock.isValidValue(value.utf8) == valid)
    }

    @Test("connection-specific fields are refused (RFC 9113 §8.2.2)", arguments: [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ])
    func connectionSpecific(name: String) {
        var block = HeaderBlock()
        #expect(throws: HTTP2Error.self) { try block.appendRegular(name: name, value: "x") }
        #expect(block.fields.isEmpty)
    }

    @Test("pseudo-header values must be non-empty and valid", arguments: ["", "/a\r\n", " /"])
    func pseudoValues(value: String) {
        var block = HeaderBlock()
        #expect(throws: HTTP2Error.self) { try block.appendPseudo(":path", value) }
    }

    @Test("removeAll empties the block for reuse; received fields are kept as they came")
    func reuse() throws {
        var block = HeaderBlock()
        try block.appendPseudo(":path", "/a")
        try block.appendRegular(name: "apns-id", value: "X", neverIndexed: true)
        #expect(block.fields.map(\.neverIndexed) == [false, true])
        #expect(block.listSize == 5 + 2 + 7 + 1 + 64)
        block.removeAll()
        #expect(block.fields.isEmpty && block.bytes.isEmpty)
        let name = Array("x-a".utf8), value = Array("v 1".utf8)
        name.withUnsafeBytes { nameBytes in
            value.withUnsafeBytes { valueBytes in block.appendReceived(name: nameBytes, value: valueBytes) }
        }
        #expect(block.name(at: 0) == "x-a" && block.value(at: 0) == "v 1")
        #expect(block.nameEquals("x-a", at: 0) && !block.nameEquals("x-ab", at: 0))
        #expect(block.valueEquals("v 1", at: 0) && !block.valueEquals("v", at: 0))
    }
}
