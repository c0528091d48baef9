import RelayCore

/// Reads one `[[api-key]]` table (issue #13, ARCHITECTURE.md §4 "The apps
/// file") into an `APIKeyEntry`: `name` (required), `key` (required, at
/// least 16 bytes, `${NAME}` as everywhere), `apps` (required: app ids of
/// this file or `default`, or `["*"]` alone). The checks across entries
/// (unique names and keys) are `AppsFile.parse`'s. No error shows the key.
struct APIKeyReader {
    private var reader: AppValueReader
    private let table: TOMLKeyedTable

    /// `number` counts the entries from 1, to name one without a valid name.
    init(_ item: TOMLItem, number: Int, file: String, environment: [String: String]) throws(AppsFileError) {
        reader = AppValueReader(file: file, entry: .apiKey("api-key #\(number)"), environment: environment)
        table = try reader.table(item, key: AppsFileKeys.apiKey, expected: "a table ([[api-key]])")
    }

    /// `appIDs`: the ids of the file's apps, which `apps` may name.
    func read(appIDs: Set<String>) throws(AppsFileError) -> APIKeyEntry {
        var reader = reader
        // As with an app's id: the name first, as it names the entry in
        // every later error; an unknown key before a missing name.
        var nameResult: Result<String, AppsFileError>?
        if let item = table.item(AppsFileKeys.keyName) {
            do {
                nameResult = .success(try reader.string(item, key: AppsFileKeys.keyName, check: apiKeyNameProblem))
            } catch {
                nameResult = .failure(error)
            }
        }
        if case .success(let name) = nameResult { reader.entry = .apiKey(name) }
        if let unknown = table.keys.first(where: { !AppsFileKeys.inAPIKey.contains($0) }) {
            throw reader.error(unknown, "unknown key; an api-key's keys are \(AppsFileKeys.inAPIKey.sorted().joined(separator: ", "))")
        }
        guard let nameResult else { throw reader.error(AppsFileKeys.keyName, "is required") }
        let name = try nameResult.get()

        guard let keyItem = table.item(AppsFileKeys.keyValue) else {
            throw reader.error(AppsFileKeys.keyValue, "is required")
        }
        let text = try reader.string(keyItem, key: AppsFileKeys.keyValue)
        let key: APIKey
        do { key = try APIKey(validating: text) } catch { throw reader.error(AppsFileKeys.keyValue, error.message) }

        return APIKeyEntry(name: name, key: key, apps: try readApps(reader, appIDs: appIDs))
    }

    /// `apps`: a non-empty array of distinct ids, each an app of this file
    /// or `default` (the app the environment variables describe; whether
    /// there is one, `AppsLoader` knows); or `["*"]`, every app. Read
    /// element by element, so a hostile array is refused at its first bad
    /// element.
    private func readApps(_ reader: AppValueReader, appIDs: Set<String>) throws(AppsFileError) -> APIKeyApps {
        let key = AppsFileKeys.keyApps
        guard let item = table.item(key) else {
            throw reader.error(key, #"is required: the ids of the apps this key may send for, or ["*"] for every app"#)
        }
        guard case .array(let list) = item else { throw reader.wrongType(key, expected: #"an array such as ["toot"]"#, item) }
        guard list.count > 0 else { throw reader.error(key, #"must name at least one app, or ["*"] for every app"#) }
        var ids: [String] = []
        for index in 0..<list.count {
            let element = list[index]
            guard case .string = element else { throw reader.wrongType(key, expected: "an array of strings", element) }
            let id = try reader.string(element, key: key)
            if id == AppsFileKeys.everyApp {
                guard list.count == 1 else { throw reader.error(key, #""*" stands for every app: give it alone"#) }
                return .all
            }
            guard id == RelayApp.defaultID || appIDs.contains(id) else {
                throw reader.error(key, "\(quoted(id)) is not the id of an app in this file, nor \"default\" (the app the environment variables describe)")
            }
            guard !ids.contains(id) else { throw reader.error(key, "names \(quoted(id)) twice") }
            ids.append(id)
        }
        return .only(ids)
    }
}
