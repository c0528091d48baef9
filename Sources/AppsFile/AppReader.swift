import APNsCore
import RelayCore

/// Reads one `[[app]]` table into an `AppDefinition`, checking every key of
/// the app by itself (ARCHITECTURE.md §7 "The apps file"); the checks
/// across apps (unique ids, topics, one default) are `AppsFile.parse`'s.
struct AppReader {
    private var reader: AppValueReader
    private let table: TOMLKeyedTable

    /// `number` counts the apps from 1, to name one without a valid id.
    init(_ item: TOMLItem, number: Int, file: String, environment: [String: String]) throws(AppsFileError) {
        reader = AppValueReader(file: file, entry: .app("app #\(number)"), environment: environment)
        table = try reader.table(item, key: AppsFileKeys.app, expected: "a table ([[app]])")
    }

    func read() throws(AppsFileError) -> AppDefinition {
        var reader = reader
        let id = try reader.readName(
            of: table, key: AppsFileKeys.id, check: idProblem, known: AppsFileKeys.inApp,
            unknownKey: "unknown key; an app's keys are \(Self.knownKeys)", named: AppsFileEntry.app)

        let topic = try table.item(AppsFileKeys.topic).map { item throws(AppsFileError) in
            try reader.string(item, key: AppsFileKeys.topic, check: topicProblem)
        }
        let isRetired = try table.item(AppsFileKeys.retired).map { item throws(AppsFileError) in
            try reader.bool(item, key: AppsFileKeys.retired)
        } ?? false
        if isRetired {
            // Nothing of a retired app is served: a credential or a setting
            // beside `retired = true` is a mistake to point out, not ignore.
            if let key = table.keys.sorted().first(where: { !AppsFileKeys.inRetiredApp.contains($0) }) {
                throw reader.error(key, "the app is retired: a retired app has an id, maybe a topic, and nothing else")
            }
            return AppDefinition(id: id, topic: topic, credentials: [:], isRetired: true)
        }
        let fcmCredentials = try table.item(AppsFileKeys.fcmCredentials).map { item throws(AppsFileError) in
            try reader.string(item, key: AppsFileKeys.fcmCredentials, check: emptyProblem)
        }
        let alert = try readAlert(reader)
        let isDefault = try table.item(AppsFileKeys.isDefault).map { item throws(AppsFileError) in
            try reader.bool(item, key: AppsFileKeys.isDefault)
        } ?? false
        let restrictedOnly = try table.item(AppsFileKeys.restrictedOnly).map { item throws(AppsFileError) in
            try reader.bool(item, key: AppsFileKeys.restrictedOnly)
        } ?? false
        // An app with FCM credentials and no APNs key at all is an Android
        // app: no APNs credential, no environment.
        let apnsOnly = Set(CredentialKeys.allNames + AppsFileKeys.environmentNames + [AppsFileKeys.environments])
        if fcmCredentials != nil && !table.keys.contains(where: apnsOnly.contains) {
            return AppDefinition(id: id, topic: topic, alert: alert, isDefault: isDefault, restrictedOnly: restrictedOnly,
                                 credentials: [:], fcmCredentials: fcmCredentials)
        }
        let environments = try readEnvironments(reader)
        let credentials = try readCredentials(reader, enabled: environments)
        if topic == nil, let token = environments.compactMap({ credentials[$0] }).first(where: { $0.isToken }) {
            throw reader.error(AppsFileKeys.topic, "is required with a token key (\(token.sourceKey)): it has no certificate to take the topic from")
        }
        return AppDefinition(id: id, topic: topic, alert: alert, isDefault: isDefault, restrictedOnly: restrictedOnly,
                             credentials: credentials, fcmCredentials: fcmCredentials)
    }

    private static let knownKeys = (AppsFileKeys.inApp.subtracting(AppsFileKeys.environmentNames).sorted()
        + AppsFileKeys.environmentNames.map { "[app.\($0)]" }).joined(separator: ", ")

    /// `environments`: a non-empty array of distinct environment names;
    /// absent, both. Read element by element, so a hostile array is refused
    /// at its first bad element.
    private func readEnvironments(_ reader: AppValueReader) throws(AppsFileError) -> [APNsEnvironment] {
        let key = AppsFileKeys.environments
        guard let item = table.item(key) else { return [.production, .development] }
        let expected = #"an array such as ["production"]"#
        guard case .array(let list) = item else { throw reader.wrongType(key, expected: expected, item) }
        guard list.count > 0 else { throw reader.error(key, "must name at least one environment") }
        var environments: [APNsEnvironment] = []
        for index in 0..<list.count {
            let element = list[index]
            guard case .string = element else { throw reader.wrongType(key, expected: "an array of strings", element) }
            let name = try reader.string(element, key: key)
            guard let environment = APNsEnvironment(rawValue: name) else {
                throw reader.error(key, "\(quoted(name)) is not an environment: \"production\" or \"development\"")
            }
            guard !environments.contains(environment) else { throw reader.error(key, "names \(quoted(name)) twice") }
            environments.append(environment)
        }
        return environments
    }

    /// `alert` (text) or `alert-loc-key` (a key of the app's
    /// Localizable.strings), not both; absent, the dialect's default.
    private func readAlert(_ reader: AppValueReader) throws(AppsFileError) -> APNsAlert? {
        let text = table.item(AppsFileKeys.alert), locKey = table.item(AppsFileKeys.alertLocKey)
        if text != nil && locKey != nil {
            throw reader.error(AppsFileKeys.alertLocKey, "alert is set too; give one of alert and alert-loc-key")
        }
        let check: (String) -> String? = { value in
            if value.isEmpty { return "must not be empty" }
            let count = value.utf8.count
            return count > AppsFileLimits.alertBytes
                ? "is \(count) bytes long; at most \(AppsFileLimits.alertBytes), as it travels in every payload" : nil
        }
        if let text { return .text(try reader.string(text, key: AppsFileKeys.alert, check: check)) }
        if let locKey { return .localized(key: try reader.string(locKey, key: AppsFileKeys.alertLocKey, check: check)) }
        return nil
    }

    /// The app's credential keys, each enabled environment's table over
    /// them, one credential per enabled environment.
    private func readCredentials(_ reader: AppValueReader, enabled: [APNsEnvironment]) throws(AppsFileError)
        -> [APNsEnvironment: CredentialSpec] {
        let base = try CredentialFields(table: table, prefix: "", reader: reader)
        var tables: [APNsEnvironment: CredentialFields] = [:]
        for environment in [APNsEnvironment.production, .development] {
            let name = environment.rawValue
            guard let item = table.item(name) else { continue }
            let overrides = try reader.table(item, key: name, expected: "a table ([app.\(name)])")
            guard enabled.contains(environment) else {
                throw reader.error(name, "environments does not enable \(name): remove [app.\(name)] or add \"\(name)\" to environments")
            }
            if let unknown = overrides.keys.first(where: { !CredentialKeys.allNames.contains($0) }) {
                throw reader.error("\(name).\(unknown)", "only credential keys can be set per environment: \(CredentialKeys.allNames.joined(separator: ", "))")
            }
            tables[environment] = try CredentialFields(table: overrides, prefix: "\(name).", reader: reader)
        }
        var resolver = CredentialResolver(base: base, reader: reader)
        var credentials: [APNsEnvironment: CredentialSpec] = [:]
        for environment in enabled {
            credentials[environment] = try resolver.credential(for: environment, table: tables[environment])
        }
        try resolver.checkAllUsed()
        return credentials
    }
}
