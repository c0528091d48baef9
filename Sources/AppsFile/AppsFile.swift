import RelayCore

/// What an apps file defines: its apps and its provider API keys.
public struct AppsFileContents: Sendable, Equatable {
    /// The `[[app]]` tables, in file order.
    public var apps: [AppDefinition]
    /// The `[[api-key]]` tables, in file order; none when the
    /// file has none.
    public var apiKeys: [APIKeyEntry]

    public init(apps: [AppDefinition], apiKeys: [APIKeyEntry] = []) {
        self.apps = apps
        self.apiKeys = apiKeys
    }
}

/// The apps file (`APPS_FILE`; ARCHITECTURE.md §7 "The apps
/// file"; every key documented in config/apps.example.toml): its text and
/// the process environment in, validated app definitions and API keys out.
/// No other I/O: the caller reads the file and loads each app's credentials.
public enum AppsFile {
    /// The apps and API keys `text` defines, in file order. `file` names
    /// the file in errors; `environment` is the process environment, for
    /// `${NAME}`. Throws the first problem found, as one line naming the
    /// file, the app or API key entry, and the key.
    public static func parse(_ text: String, file: String, environment: [String: String]) throws(AppsFileError)
        -> AppsFileContents {
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
        var apiKeys: [APIKeyEntry] = []
        let appIDs = Set(apps.map(\.id))
        if let keyItems = try apiKeyItems(root, file: file) {
            for index in 0..<keyItems.count {
                let entry = try APIKeyReader.read(keyItems[index], number: index + 1, file: file,
                                                  environment: environment, appIDs: appIDs)
                try checkAcrossAPIKeys(entry, earlier: apiKeys, file: file)
                apiKeys.append(entry)
            }
        }
        return AppsFileContents(apps: apps, apiKeys: apiKeys)
    }

    /// The `[[app]]` tables; the top level holds those and `[[api-key]]`
    /// tables only.
    private static func appItems(_ root: TOMLKeyedTable, file: String) throws(AppsFileError) -> TOMLList {
        if let key = root.keys.first(where: { !AppsFileKeys.topLevel.contains($0) }) {
            throw AppsFileError(file: file, key: key, message: "unknown key; the file holds [[app]] and [[api-key]] tables only")
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

    /// The `[[api-key]]` tables, nil when there are none; at
    /// most `AppsFileLimits.apiKeys`.
    private static func apiKeyItems(_ root: TOMLKeyedTable, file: String) throws(AppsFileError) -> TOMLList? {
        guard let item = root.item(AppsFileKeys.apiKey) else { return nil }
        guard case .array(let list) = item else {
            throw AppsFileError(file: file, key: AppsFileKeys.apiKey,
                                message: "must be an array of tables ([[api-key]]), not \(item.typeName)")
        }
        guard list.count <= AppsFileLimits.apiKeys else {
            throw AppsFileError(file: file, key: AppsFileKeys.apiKey,
                                message: "\(list.count) API keys; at most \(AppsFileLimits.apiKeys)")
        }
        return list
    }

    /// Names are unique (logs and metrics tell keys apart by them), and so
    /// are keys (a request's key must name one entry and its apps).
    private static func checkAcrossAPIKeys(_ entry: APIKeyEntry, earlier: [APIKeyEntry], file: String)
        throws(AppsFileError) {
        for other in earlier {
            if other.name == entry.name {
                throw AppsFileError(file: file, apiKey: entry.name, key: AppsFileKeys.keyName,
                                    message: "another api-key has this name")
            }
            if other.key == entry.key {
                throw AppsFileError(file: file, apiKey: entry.name, key: AppsFileKeys.keyValue,
                                    message: "is the key of api-key \(quoted(other.name)) too; give each its own")
            }
            // A token's `kid` and a certificate must each name one entry's apps.
            if let keyID = entry.providerKey?.keyID, other.providerKey?.keyID == keyID {
                throw AppsFileError(file: file, apiKey: entry.name, key: AppsFileKeys.jwtKeyID,
                                    message: "\(quoted(keyID)) is the jwt-key-id of api-key \(quoted(other.name)) too")
            }
            if let fingerprint = entry.clientCertificateSHA256, other.clientCertificateSHA256 == fingerprint {
                throw AppsFileError(file: file, apiKey: entry.name, key: AppsFileKeys.clientCertificateSHA256,
                                    message: "is the client-certificate-sha256 of api-key \(quoted(other.name)) too")
            }
        }
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
