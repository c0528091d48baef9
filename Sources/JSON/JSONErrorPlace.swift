// Where a JSON text stops being JSON, told without quoting it: for a file
// whose text may be secret (a service account's holds its private key),
// where a JSONSyntaxError's message would show a byte of it.

/// Where a JSON text stops being JSON, as a person finds it in an editor:
/// the line and column (in bytes, from 1), and a hint when the byte there
/// explains itself without being shown.
public struct JSONErrorPlace: Sendable, Equatable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let hint: String?

    public init(line: Int, column: Int, hint: String? = nil) {
        (self.line, self.column, self.hint) = (line, column, hint)
    }

    /// The place of byte `offset` of `text` (a JSONSyntaxError's).
    public init(_ text: [UInt8], offset: Int) {
        let offset = min(max(offset, 0), text.count)
        var line = 1, lineStart = 0
        for index in 0..<offset where text[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        let hint: String?
        if offset == text.count {
            hint = "the text ends early"
        } else if text[offset] < 0x20 {
            // Text pasted into a string with its line breaks as they are (a PEM key).
            hint = "a control character (byte 0x\(String(text[offset], radix: 16, uppercase: true))) "
                + #"where JSON needs it escaped (a line break in a string is written \n)"#
        } else {
            hint = nil
        }
        self.init(line: line, column: offset - lineStart + 1, hint: hint)
    }

    public var description: String {
        "at line \(line), column \(column)" + (hint.map { ", \($0)" } ?? "")
    }
}
