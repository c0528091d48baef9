/// Which table of the file a value is in, as errors name it.
enum AppsFileEntry {
    /// An `[[app]]`: its id, or "app #3" until it has a valid one.
    case app(String)
    /// An `[[api-key]]`: its name, or "api-key #2" until it has a valid one.
    case apiKey(String)
}

/// Reads the values of one app or API key entry: their TOML type, `${NAME}`
/// expansion and the string limit. Its errors name the file, the entry and
/// the key; none quotes a value (the checks that may quote one,
/// ValueSyntax, are passed in).
struct AppValueReader {
    let file: String
    var entry: AppsFileEntry
    let environment: [String: String]

    func error(_ key: String?, _ message: String) -> AppsFileError {
        switch entry {
        case .app(let app): AppsFileError(file: file, app: app, key: key, message: message)
        case .apiKey(let name): AppsFileError(file: file, apiKey: name, key: key, message: message)
        }
    }

    func wrongType(_ key: String, expected: String, _ item: TOMLItem) -> AppsFileError {
        error(key, "must be \(expected), not \(item.typeName)")
    }

    /// A string value with its `${NAME}` references expanded, at most
    /// `AppsFileLimits.stringBytes` before and after, that `check` (nil:
    /// any) finds no problem with.
    func string(_ item: TOMLItem, key: String, check: ((String) -> String?)? = nil) throws(AppsFileError) -> String {
        guard case .string(let written) = item else { throw wrongType(key, expected: "a string", item) }
        try checkLength(written, key: key, after: "")
        let value: String
        do {
            value = try expandVariables(in: written, environment: environment)
        } catch {
            throw self.error(key, error.message)
        }
        try checkLength(value, key: key, after: " after ${…} expansion")
        if let problem = check?(value) { throw error(key, problem) }
        return value
    }

    /// The value that names the entry (an app's `id`, an api-key's
    /// `name`), read first, as it names the entry in every later error;
    /// once it is valid, `entry` becomes `named(value)`. A key `known`
    /// does not hold is reported before a missing or bad name, as a
    /// misspelt name key is the likelier mistake.
    mutating func readName(of table: TOMLKeyedTable, key: String, check: @escaping (String) -> String?,
                           known: Set<String>, unknownKey message: String, named: (String) -> AppsFileEntry)
        throws(AppsFileError) -> String {
        var result: Result<String, AppsFileError>?
        if let item = table.item(key) {
            result = Result { () throws(AppsFileError) in try string(item, key: key, check: check) }
        }
        if case .success(let name) = result { entry = named(name) }
        if let unknown = table.keys.first(where: { !known.contains($0) }) { throw error(unknown, message) }
        guard let result else { throw error(key, "is required") }
        return try result.get()
    }

    func bool(_ item: TOMLItem, key: String) throws(AppsFileError) -> Bool {
        guard case .bool(let value) = item else { throw wrongType(key, expected: "true or false", item) }
        return value
    }

    func table(_ item: TOMLItem, key: String, expected: String) throws(AppsFileError) -> TOMLKeyedTable {
        guard case .table(let table) = item else { throw wrongType(key, expected: expected, item) }
        return table
    }

    private func checkLength(_ text: String, key: String, after: String) throws(AppsFileError) {
        let count = text.utf8.count
        if count > AppsFileLimits.stringBytes {
            throw error(key, "is \(count) bytes long\(after); at most \(AppsFileLimits.stringBytes)")
        }
    }
}
