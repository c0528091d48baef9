import RelayCore

/// Reads one `[[api-key]]` table (ARCHITECTURE.md §7 "The apps
/// file") into an `APIKeyEntry`: `name` (required), `key` (required, at
/// least 16 bytes, `${NAME}` as everywhere), `apps` (required: app ids of
/// this file or `default`, or `["*"]` alone). The checks across entries
/// (unique names and keys) are `AppsFile.parse`'s. No error shows the key.
enum APIKeyReader {
    /// `number` counts the entries from 1, to name one without a valid
    /// name; `appIDs` are the ids of the file's apps, which `apps` may name.
    static func read(_ item: TOMLItem, number: Int, file: String, environment: [String: String],
                     appIDs: Set<String>) throws(AppsFileError) -> APIKeyEntry {
        var reader = AppValueReader(file: file, entry: .apiKey("api-key #\(number)"), environment: environment)
        let table = try reader.table(item, key: AppsFileKeys.apiKey, expected: "a table ([[api-key]])")
        let name = try reader.readName(
            of: table, key: AppsFileKeys.keyName, check: apiKeyNameProblem, known: AppsFileKeys.inAPIKey,
            unknownKey: "unknown key; an api-key's keys are \(AppsFileKeys.inAPIKey.sorted().joined(separator: ", "))",
            named: AppsFileEntry.apiKey)

        guard let keyItem = table.item(AppsFileKeys.keyValue) else {
            throw reader.error(AppsFileKeys.keyValue, "is required")
        }
        let text = try reader.string(keyItem, key: AppsFileKeys.keyValue)
        let key: APIKey
        do { key = try APIKey(validating: text) } catch { throw reader.error(AppsFileKeys.keyValue, error.message) }

        return APIKeyEntry(name: name, key: key, apps: try readApps(table, reader, appIDs: appIDs),
                           providerKey: try readProviderKey(table, reader),
                           clientCertificateSHA256: try readFingerprint(table, reader))
    }

    /// `jwt-key-id` and `jwt-team-id` (Apple's syntax, as an app's `key-id`
    /// and `team-id`) and `jwt-public-key` (a file name): all three, or none.
    private static func readProviderKey(_ table: TOMLKeyedTable, _ reader: AppValueReader)
        throws(AppsFileError) -> APIKeyProviderKey? {
        let present = AppsFileKeys.jwtKeys.filter { table.item($0) != nil }
        guard !present.isEmpty else { return nil }
        if let missing = AppsFileKeys.jwtKeys.first(where: { table.item($0) == nil }) {
            throw reader.error(missing, "is required with \(present.joined(separator: " and ")): "
                + "a provider-token key needs \(AppsFileKeys.jwtKeys.joined(separator: ", "))")
        }
        func value(_ key: String, _ check: @escaping (String) -> String?) throws(AppsFileError) -> String {
            guard let item = table.item(key) else { throw reader.error(key, "is required") }
            return try reader.string(item, key: key, check: check)
        }
        return APIKeyProviderKey(keyID: try value(AppsFileKeys.jwtKeyID, appleIDProblem),
                                 teamID: try value(AppsFileKeys.jwtTeamID, appleIDProblem),
                                 publicKeyFile: try value(AppsFileKeys.jwtPublicKey, emptyProblem))
    }

    /// `client-certificate-sha256`: 64 hex digits, pairs optionally
    /// separated by `:` as `openssl x509 -fingerprint -sha256` prints them.
    private static func readFingerprint(_ table: TOMLKeyedTable, _ reader: AppValueReader)
        throws(AppsFileError) -> [UInt8]? {
        let key = AppsFileKeys.clientCertificateSHA256
        guard let item = table.item(key) else { return nil }
        let text = try reader.string(item, key: key)
        guard let fingerprint = sha256Fingerprint(text) else {
            throw reader.error(key, "must be a SHA-256 fingerprint: 64 hex digits, pairs optionally separated by \":\" "
                + "(openssl x509 -noout -fingerprint -sha256 -in client.pem)")
        }
        return fingerprint
    }

    /// `apps`: a non-empty array of distinct ids, each an app of this file
    /// or `default` (the app the environment variables describe; whether
    /// there is one, `AppsLoader` knows); or `["*"]`, every app. Read
    /// element by element, so a hostile array is refused at its first bad
    /// element.
    private static func readApps(_ table: TOMLKeyedTable, _ reader: AppValueReader, appIDs: Set<String>)
        throws(AppsFileError) -> APIKeyApps {
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
