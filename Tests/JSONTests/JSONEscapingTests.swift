// The one string escaping (RFC 8259 §7): its forms, and its count
// agreeing with what it writes.

import JSON
import Testing

@Test("uses short escapes and \\u00XX for control characters")
func escapeForms() {
    var output: [UInt8] = []
    appendJSONStringContent("\"\\\u{8}\u{C}\n\r\t\u{0}\u{1F}/", to: &output)
    #expect(String(decoding: output, as: UTF8.self) == #"\"\\\b\f\n\r\t\u0000\u001f/"#)
    #expect(jsonEscapedCount("\"\\\u{8}\u{C}\n\r\t\u{0}\u{1F}/".utf8) == output.count)
}
