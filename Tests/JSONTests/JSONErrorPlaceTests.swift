// Where a JSON text stops being JSON, as line and column, without the text.

import JSON
import Testing

@Test("a syntax error's offset is told as line and column, with a hint for what explains itself", arguments: [
    ("{", 1, 1, 2, "the text ends early"),
    ("{\n  \"a\": 1,\n  \"b\" 2\n}", 18, 3, 7, nil),
    ("{\"k\": \"line\nbreak\"}", 11, 1, 12, "a control character (byte 0xA) where JSON needs it escaped (a line break in a string is written \\n)"),
    ("\n\n\t", 2, 3, 1, "a control character (byte 0x9) where JSON needs it escaped (a line break in a string is written \\n)"),
    ("ab", -5, 1, 1, nil),
    ("ab", 99, 1, 3, "the text ends early"),
] as [(String, Int, Int, Int, String?)])
func errorPlace(text: String, offset: Int, line: Int, column: Int, hint: String?) {
    #expect(JSONErrorPlace(Array(text.utf8), offset: offset) == JSONErrorPlace(line: line, column: column, hint: hint))
}

@Test("the place of a parser's error names no byte of the text")
func placeOfParserError() throws {
    let text = Array("{\"secret\": \"abc\"def\"}".utf8)
    let error = try #require(throws: JSONSyntaxError.self) { try parseStrictJSON(text) }
    #expect(error.description.contains("'d'"))
    let place = JSONErrorPlace(text, offset: error.offset)
    #expect(place.description == "at line 1, column 17")
}
