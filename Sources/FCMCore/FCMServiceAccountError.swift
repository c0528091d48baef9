// Why a service account's file cannot be used: one line naming the field
// and what is wrong with it, for check-config, the start-up log and a
// reload (the caller puts the file's name first). Never the private key:
// a reason about `private_key` says what is wrong with its shape only, and
// a syntax error says where, not what it found there (the parser's own
// message may quote a byte of the text, and that text holds the key).

public enum FCMServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(bytes: Int, limit: Int)
    case notJSON(JSONErrorPlace)
    case notAnObject(kind: String)
    case missing(field: String)
    case notAString(field: String, kind: String)
    /// `reason` completes "<field> …": "is empty", "has no PEM block".
    case invalid(field: String, reason: String)

    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            "is \(bytes) bytes, more than a service account's file (at most \(limit))"
        case .notJSON(let place):
            "is not JSON (RFC 8259): \(place)"
        case .notAnObject(let kind):
            "is \(kind), not a JSON object"
        case .missing(let field):
            "\(field) is missing"
        case .notAString(let field, let kind):
            "\(field) is \(kind), not a string"
        case .invalid(let field, let reason):
            "\(field) \(reason)"
        }
    }
}

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

    /// The place of byte `offset` of `text`.
    init(_ text: [UInt8], offset: Int) {
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
            // A PEM key pasted into the file with its line breaks as they are.
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
