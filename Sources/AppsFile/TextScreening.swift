// What the apps file's text may not hold, checked before TOML reads it.

/// A character the text may not hold, and where (1-based; the column counts
/// Unicode scalars).
struct TextProblem: Equatable {
    var line: Int
    var column: Int
    var message: String
}

/// The first place in `text` that an apps file may not hold:
/// - U+0000: TOMLKit hands text to toml++ as a C string, which would end
///   there silently;
/// - a `\u0000` or `\U00000000` escape: TOMLKit hands strings and keys
///   back as C strings, so the value would come back cut short (a password
///   read wrong, or a key not found again). Checked in the raw text, so a
///   literal string or comment holding one is refused too;
/// - U+FFFD: the caller decodes the file's bytes with
///   `String(decoding:as: UTF8.self)`, which turns bytes that are not UTF-8
///   into U+FFFD; refusing it says the file is not UTF-8 instead of
///   loading a password or path that differs from the file's bytes.
func screenText(_ text: String) -> TextProblem? {
    let nulEscapes: [[Unicode.Scalar]] = [Array("u0000".unicodeScalars), Array("U00000000".unicodeScalars)]
    let scalars = Array(text.unicodeScalars)
    var line = 1
    var lineStart = 0
    for (index, scalar) in scalars.enumerated() {
        let column = index - lineStart + 1
        switch scalar {
        case "\n":
            line += 1
            lineStart = index + 1
        case "\u{0}":
            return TextProblem(line: line, column: column, message: "a NUL character (U+0000); the file must be text")
        case "\u{FFFD}":
            return TextProblem(line: line, column: column,
                               message: "not UTF-8 (or U+FFFD, the replacement character, which the file may not hold)")
        case "\\" where nulEscapes.contains(where: { scalars[(index + 1)...].starts(with: $0) }):
            return TextProblem(line: line, column: column,
                               message: "a \\u0000 escape: keys and values may not hold U+0000")
        default:
            break
        }
    }
    return nil
}
