import TOMLKit

// The one file that touches TOMLKit (toml++ underneath, TOML 1.0): parses
// the text and hands out what the apps file reads, lazily, as Swift values.
// Lazily, because a hostile file may hold a million keys or array elements
// the apps file never needs to look at: the reader rejects the first key it
// does not know, or an `app` array that is too long, before touching more.
//
// TOMLKit 0.6.0 frees nothing that toml++ allocates (parsed tables, key
// lists, the strings it hands out): each parse leaks its parse tree (about
// 8 KiB for the 5.6 KB config/apps.example.toml). The relay parses its apps
// file at start and at each SIGHUP, a file of at most 1 MiB
// (AppsFileLimits), so the loss is bounded per reload; the fuzzer runs with
// leak detection off for this reason (Fuzz/README.md).

/// A TOML syntax error as toml++ reports it.
struct TOMLSyntaxError: Error {
    var line: Int
    var column: Int
    /// toml++'s description, with every quoted fragment that is not a key
    /// of the apps file replaced by `'…'`: toml++ quotes what it saw (an
    /// escape inside a string, an unquoted number that does not fit 64 bits),
    /// and that may be part of a password or key (`p12-password = 1234…`).
    var message: String
}

/// A value of the document, as the apps file distinguishes them. Integers,
/// floats, dates and times are only ever the wrong type here, so they keep
/// their type's name alone.
enum TOMLItem {
    case string(String)
    case bool(Bool)
    case array(TOMLList)
    case table(TOMLKeyedTable)
    case other(typeName: String)

    /// "a string", "an integer"…: for "must be a string, not an integer".
    var typeName: String {
        switch self {
        case .string: "a string"
        case .bool: "a boolean"
        case .array: "an array"
        case .table: "a table"
        case .other(let typeName): typeName
        }
    }

    fileprivate init(_ value: TOMLValueConvertible) {
        switch value.type {
        case .string: self = value.string.map(TOMLItem.string) ?? .other(typeName: "a string")
        case .bool: self = value.bool.map(TOMLItem.bool) ?? .other(typeName: "a boolean")
        case .array: self = value.array.map { .array(TOMLList($0)) } ?? .other(typeName: "an array")
        case .table: self = value.table.map { .table(TOMLKeyedTable($0)) } ?? .other(typeName: "a table")
        case .int: self = .other(typeName: "an integer")
        case .double: self = .other(typeName: "a floating-point number")
        case .date: self = .other(typeName: "a date")
        case .time: self = .other(typeName: "a time")
        case .dateTime: self = .other(typeName: "a date-time")
        }
    }
}

/// A table: its keys (in toml++'s order, sorted) and a lookup.
struct TOMLKeyedTable {
    private let table: TOMLTable
    let keys: [String]

    fileprivate init(_ table: TOMLTable) {
        self.table = table
        keys = table.keys
    }

    /// The value at `key`; nil when there is none. TOMLKit hands keys out
    /// as C strings, so a key holding U+0000 would come back cut short and
    /// not be found; `AppsFile` rejects `\u0000` escapes before parsing.
    func item(_ key: String) -> TOMLItem? {
        table[key].map(TOMLItem.init)
    }
}

/// An array: its length and its elements by position.
struct TOMLList {
    private let array: TOMLArray
    let count: Int

    fileprivate init(_ array: TOMLArray) {
        self.array = array
        count = array.count
    }

    subscript(index: Int) -> TOMLItem {
        TOMLItem(array[index])
    }
}

/// Parses `text` as a TOML document. `shownKeys` are the key names a syntax
/// message may quote (see `TOMLSyntaxError.message`).
func parseTOML(_ text: String, shownKeys: Set<String>) throws(TOMLSyntaxError) -> TOMLKeyedTable {
    do {
        return TOMLKeyedTable(try TOMLTable(string: text))
    } catch let error as TOMLParseError {
        throw TOMLSyntaxError(line: error.source.begin.line, column: error.source.begin.column,
                              message: hidingQuotedValues(error.description, shownKeys: shownKeys))
    } catch {
        // TOMLTable(string:) throws nothing else; should a later TOMLKit
        // do, its message is not known to be free of secrets.
        throw TOMLSyntaxError(line: 1, column: 1, message: "the file is not valid TOML")
    }
}

/// `message` with each `'…'` fragment kept only when it is a key path made
/// of `shownKeys` (toml++'s "cannot redefine existing table 'app'"); an
/// unpaired quote hides the rest.
func hidingQuotedValues(_ message: String, shownKeys: Set<String>) -> String {
    var result = ""
    var rest = Substring(message)
    while let open = rest.firstIndex(of: "'") {
        result += rest[..<open]
        let afterOpen = rest.index(after: open)
        guard let close = rest[afterOpen...].firstIndex(of: "'") else {
            return result + "'…'"
        }
        let fragment = rest[afterOpen..<close]
        let isKeyPath = !fragment.isEmpty && fragment.split(separator: ".", omittingEmptySubsequences: false)
            .allSatisfy { shownKeys.contains(String($0)) }
        result += isKeyPath ? "'\(fragment)'" : "'…'"
        rest = rest[rest.index(after: close)...]
    }
    return result + rest
}
