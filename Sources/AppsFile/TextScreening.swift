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
///   loading a password or path that differs from the file's bytes;
/// - a table header whose key does not start right: toml++ 3.4.0 (in
///   TOMLKit 0.6.0) asserts instead of reporting it (`[=]`, `[[[app]]`,
///   `[` at the end of a line; found by the fuzzer), which aborts the
///   process, release builds included (SwiftPM does not define NDEBUG).
///   Every line that starts with `[` is checked, so a line of a multi-line
///   array or string that starts so is refused too; no valid apps file has
///   one (no key takes nested arrays, no PEM or base64 line starts so);
/// - an array value that would start with `}`, or with U+0085, U+2028 or
///   U+2029, which toml++ takes for white space but does not skip (its
///   `parse_value` asserts; found by the fuzzer): `}` after `[` or `,` and
///   blanks, line ends or comments is refused wherever it stands, in a
///   string, comment or inline table too (where TOML 1.0 allows no
///   trailing comma anyway); U+0085, U+2028 and U+2029 anywhere, as they
///   are line ends to Unicode and an error must stay one line.
/// - a value of ten characters with `-` fifth and eighth (a date), a space,
///   one digit and then the value's end (`a = 1979-05-27 4`): toml++ reads
///   on for a time and asserts at the end (found by the fuzzer). Refused
///   after `=`, `[`, `,` or a line start, in a string too.
func screenText(_ text: String) -> TextProblem? {
    let nulEscapes: [[Unicode.Scalar]] = [Array("u0000".unicodeScalars), Array("U00000000".unicodeScalars)]
    let scalars = Array(text.unicodeScalars)
    var line = 1
    // toml++ skips a byte-order mark at the start.
    var lineStart = scalars.first == "\u{FEFF}" ? 1 : 0
    if let offset = badTableHeader(scalars, lineStart: lineStart) {
        return headerProblem(line: 1, column: offset + 1)
    }
    for (index, scalar) in scalars.enumerated() {
        let column = index - lineStart + 1
        switch scalar {
        case "\n":
            line += 1
            lineStart = index + 1
            if let offset = badTableHeader(scalars, lineStart: lineStart) {
                return headerProblem(line: line, column: offset + 1)
            }
        case "\u{0}":
            return TextProblem(line: line, column: column, message: "a NUL character (U+0000); the file must be text")
        case "\u{FFFD}":
            return TextProblem(line: line, column: column,
                               message: "not UTF-8 (or U+FFFD, the replacement character, which the file may not hold)")
        case "\u{85}", "\u{2028}", "\u{2029}":
            return TextProblem(line: line, column: column,
                               message: "a Unicode line end (U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(4))) the file may not hold")
        case " " where isShortDateTime(scalars, space: index):
            return TextProblem(line: line, column: column + 1,
                               message: "a date, a space and one digit: write a time in full, such as 1979-05-27 07:32:00")
        case "[", ",":
            if let brace = braceOpening(scalars, at: index) {
                let braceLine = line + scalars[index..<brace].filter { $0 == "\n" }.count
                let braceLineStart = scalars[index..<brace].lastIndex(of: "\n").map { $0 + 1 } ?? lineStart
                return TextProblem(line: braceLine, column: brace - braceLineStart + 1,
                                   message: "a value or \"]\" must follow \"\(scalar)\" in an array, not \"}\"")
            }
        case "\\" where nulEscapes.contains(where: { scalars[(index + 1)...].starts(with: $0) }):
            return TextProblem(line: line, column: column,
                               message: "a \\u0000 escape: keys and values may not hold U+0000")
        default:
            break
        }
    }
    return nil
}

private func headerProblem(line: Int, column: Int) -> TextProblem {
    TextProblem(line: line, column: column,
                message: "a table header must start with a key, such as [app.production] or [[app]]")
}

/// Where the line at `lineStart` is a table header whose key starts with a
/// character toml++'s `parse_key` asserts on, that character's offset in
/// the line. toml++'s `parse_table_header`: `[`, spaces or tabs, a second
/// `[` only straight after the first (with space between, toml++ reports
/// the error itself), spaces or tabs, then `]` (reported), the end (reported)
/// or the key, which must start with a bare-key character or a quote.
private func badTableHeader(_ scalars: [Unicode.Scalar], lineStart: Int) -> Int? {
    func skipBlanks(_ index: inout Int) {
        while index < scalars.count && (scalars[index] == " " || scalars[index] == "\t") { index += 1 }
    }
    var index = lineStart
    skipBlanks(&index)
    guard index < scalars.count, scalars[index] == "[" else { return nil }
    index += 1
    let afterFirst = index
    skipBlanks(&index)
    if index < scalars.count && scalars[index] == "[" {
        guard index == afterFirst else { return nil }
        index += 1
        skipBlanks(&index)
    }
    guard index < scalars.count else { return nil }
    let first = scalars[index]
    let startsKey = first.isASCII && (first.properties.isAlphabetic || ("0"..."9").contains(first)
        || first == "_" || first == "-" || first == "\"" || first == "'" || first == "]")
    return startsKey ? nil : index - lineStart
}

/// Where `}` follows the `[` or `,` at `index` after only blanks, line ends
/// and comments: what toml++'s `parse_array` hands its `parse_value`
/// unchecked.
private func braceOpening(_ scalars: [Unicode.Scalar], at index: Int) -> Int? {
    var next = index + 1
    while next < scalars.count {
        switch scalars[next] {
        case " ", "\t", "\r", "\n":
            next += 1
        case "#":
            while next < scalars.count && scalars[next] != "\n" { next += 1 }
        case "}":
            return next
        default:
            return nil
        }
    }
    return nil
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

/// Whether the space at `space` follows a value of ten characters with `-`
/// fifth and eighth, starting after `=`, `[`, `,`, blanks or a line start,
/// and is followed by one digit and a character that ends a value: what
/// toml++'s date-time scan asserts on.
private func isShortDateTime(_ scalars: [Unicode.Scalar], space: Int) -> Bool {
    let start = space - 10
    guard start >= 0, space + 2 < scalars.count, ("0"..."9").contains(scalars[space + 1]),
          endsValue(scalars[space + 2]), scalars[start + 4] == "-", scalars[start + 7] == "-",
          !scalars[start..<space].contains(where: endsValue) else { return false }
    var before = start - 1
    while before >= 0 && (scalars[before] == " " || scalars[before] == "\t") { before -= 1 }
    return before < 0 || ["=", "[", ",", "\n"].contains(scalars[before])
}

/// toml++'s value terminators: white space, line ends, `]`, `}`, `,`, `#`.
private func endsValue(_ scalar: Unicode.Scalar) -> Bool {
    scalar.properties.isWhitespace || ["]", "}", ",", "#"].contains(scalar)
}
