// The strict parser on its own: RFC 8259's grammar, what it keeps
// exactly, and what it refuses.

@testable import JSON
import Testing

@Test("valid JSON texts parse to the values they write", arguments: [
    ("0", JSONValue.number("0")),
    ("-0.5e-3", .number("-0.5e-3")),
    (" true ", .bool(true)),
    ("null", .null),
    (#""a\u00e9\ud83d\ude00""#, .string("aé😀")),
    (#"{"a":[1,{}],"b":"x"}"#, .object([JSONMember(name: "a", value: .array([.number("1"), .object([])])),
                                         JSONMember(name: "b", value: .string("x"))])),
])
func validJSONParses(_ text: String, _ value: JSONValue) throws {
    #expect(try parseStrictJSON(Array(text.utf8)) == value)
}

@Test("invalid JSON texts are refused with the offset of the fault", arguments: [
    ("01", 1), ("1.", 2), ("-", 1), ("1e", 2), ("tru", 0), ("[1,]", 3), (#"{"a"}"#, 4), (#"{"a":1,}"#, 7),
    ("{1:2}", 1), (#""\x""#, 1), (#""\u12""#, 1), (#""\udc00""#, 1), ("[1 2]", 3), ("'a'", 0), ("NaN", 0),
    ("Infinity", 0), ("+1", 0), ("[1e400]", 1), ("-1E+309", 0), ("[" + String(repeating: "9", count: 310) + "]", 1),
])
func invalidJSONIsRefused(_ text: String, _ offset: Int) {
    #expect { try parseStrictJSON(Array(text.utf8)) } throws: { ($0 as? JSONSyntaxError)?.offset == offset }
}

@Test("overlong and surrogate UTF-8 forms are refused", arguments: [
    [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0xE2, 0x82],
] as [[UInt8]])
func badUTF8IsRefused(_ bytes: [UInt8]) {
    #expect(throws: JSONSyntaxError.self) { try parseStrictJSON([UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")]) }
}

@Test("nesting up to the limit parses and one more level is refused")
func nestingLimit() throws {
    let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
    #expect(throws: Never.self) { try parseStrictJSON(Array(deepest.utf8)) }
    let tooDeep = "[" + deepest + "]"
    #expect(throws: JSONSyntaxError(offset: 64, message: "arrays and objects nested more than 64 deep")) {
        try parseStrictJSON(Array(tooDeep.utf8))
    }
}

@Test("a value written back parses to the same value")
func writtenValueParsesBack() throws {
    let text = #"{"s":"\"\\\/\b\f\n\r\t\u0000 ☃","n":[-1.25E+7,0,1e2],"o":{"t":true,"f":false,"z":null}}"#
    let value = try parseStrictJSON(Array(text.utf8))
    var written: [UInt8] = []
    value.appendJSON(to: &written)
    #expect(try parseStrictJSON(written) == value)
}
