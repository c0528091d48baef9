import RelayCore

/// The apps file (`APPS_FILE`, issue #12; ARCHITECTURE.md §4 "The apps
/// file"; every key documented in config/apps.example.toml): its text and
/// the process environment in, validated app definitions out. No other
/// I/O: the caller reads the file and loads each app's credentials.
public enum AppsFile {
    /// The apps `text` defines, in file order. `file` names the file in
    /// errors; `environment` is the process environment, for `${NAME}`.
    /// Throws the first problem found, as one line naming the file, the app
    /// and the key.
    public static func parse(_ text: String, file: String, environment: [String: String]) throws(AppsFileError)
        -> [AppDefinition] {
        let size = text.utf8.count
        guard size <= AppsFileLimits.fileBytes else {
            throw AppsFileError(file: file, message: "is \(size) bytes long; at most \(AppsFileLimits.fileBytes) (1 MiB)")
        }
        if let problem = screenText(text) {
            throw AppsFileError(file: file, line: problem.line, column: problem.column, message: problem.message)
        }
        let root: TOMLKeyedTable
        do {
            root = try parseTOML(text, shownKeys: AppsFileKeys.shown)
        } catch {
            throw AppsFileError(file: file, line: error.line, column: error.column, message: error.message)
        }
        let items = try appItems(root, file: file)
        var apps: [AppDefinition] = []
        for index in 0..<items.count {
            let app = try AppReader(items[index], number: index + 1, file: file, environment: environment).read()
            try checkAcrossApps(app, earlier: apps, file: file)
            apps.append(app)
        }
        return apps
    }

    /// The `[[app]]` tables: the only thing the top level may hold.
    private static func appItems(_ root: TOMLKeyedTable, file: String) throws(AppsFileError) -> TOMLList {
        for key in root.keys where key != AppsFileKeys.app {
            switch key {
            case AppsFileKeys.apiKey:
                // Issue #13 adds the relay's API key here; until then it is
                // refused like any other key, with a word on why.
                throw AppsFileError(file: file, key: key, message: "is not supported by this version of the relay (issue #13)")
            default:
                throw AppsFileError(file: file, key: key, message: "unknown key; the file holds [[app]] tables only")
            }
        }
        guard let item = root.item(AppsFileKeys.app) else {
            throw AppsFileError(file: file, key: AppsFileKeys.app, message: "no [[app]]: the file must define at least one app")
        }
        guard case .array(let list) = item else {
            throw AppsFileError(file: file, key: AppsFileKeys.app,
                                message: "must be an array of tables ([[app]]), not \(item.typeName)")
        }
        guard list.count > 0 else {
            throw AppsFileError(file: file, key: AppsFileKeys.app, message: "no [[app]]: the file must define at least one app")
        }
        guard list.count <= AppsFileLimits.apps else {
            throw AppsFileError(file: file, key: AppsFileKeys.app, message: "\(list.count) apps; at most \(AppsFileLimits.apps)")
        }
        return list
    }

    /// Ids and topics are unique, and a topic is no other app's id (a
    /// `/push/<app-or-topic>/…` URL would name two apps); at most one
    /// app has `default = true`.
    private static func checkAcrossApps(_ app: AppDefinition, earlier: [AppDefinition], file: String) throws(AppsFileError) {
        func error(_ key: String, _ message: String) -> AppsFileError {
            AppsFileError(file: file, app: app.id, key: key, message: message)
        }
        for other in earlier {
            if other.id == app.id { throw error(AppsFileKeys.id, "another app has this id") }
            if let topic = app.topic, topic == other.topic {
                throw error(AppsFileKeys.topic, "\(quoted(topic)) is the topic of app \(quoted(other.id)) too")
            }
            if let topic = app.topic, topic == other.id {
                throw error(AppsFileKeys.topic, "\(quoted(topic)) is the id of another app; /push/<app-or-topic>/… would name both")
            }
            if let topic = other.topic, topic == app.id {
                throw error(AppsFileKeys.id, "\(quoted(app.id)) is the topic of app \(quoted(other.id)); /push/<app-or-topic>/… would name both")
            }
            if app.isDefault && other.isDefault {
                throw error(AppsFileKeys.isDefault, "app \(quoted(other.id)) is the default already; at most one app has default = true")
            }
        }
    }
}
