import APNsCore
import RelayCore

/// The credential keys one table sets, the app's own or one of its
/// `[app.<environment>]` tables, read and checked (`p12-file` or
/// `p12-base64` with `p12-password`, or `p8-file` or `p8` with `key-id` and
/// `team-id`).
struct CredentialFields {
    /// "" for the app's own keys, "development." for its environment's
    /// table: how errors name the keys.
    let prefix: String
    private(set) var values: [String: String] = [:]

    /// The credential keys of `table`; the caller checks the other keys.
    init(table: TOMLKeyedTable, prefix: String, reader: AppValueReader) throws(AppsFileError) {
        self.prefix = prefix
        for key in CredentialKeys.allNames {
            guard let item = table.item(key) else { continue }
            values[key] = try reader.string(item, key: prefix + key, check: Self.check(for: key))
        }
        let sources = CredentialKeys.sources.filter { values[$0] != nil }
        if sources.count > 1 {
            throw reader.error(prefix + sources[1], "\(sources[0]) is set too; give one credential source here")
        }
    }

    /// The one source key this table sets, if any.
    var source: String? {
        CredentialKeys.sources.first { values[$0] != nil }
    }

    private static func check(for key: String) -> ((String) -> String?)? {
        switch key {
        case CredentialKeys.keyID, CredentialKeys.teamID: appleIDProblem
        case CredentialKeys.p12Password: nil  // a PKCS#12 file may have an empty password
        default: emptyProblem
        }
    }
}

/// Each environment's credential from the app's keys and that environment's
/// table: a source key there replaces the app's source (a certificate app
/// may have a token key for the sandbox), and every other key there
/// overrides the app's; what the table does not set comes from the app.
struct CredentialResolver {
    let base: CredentialFields
    let reader: AppValueReader
    /// The app's own keys some environment took: the others are errors
    /// (`checkAllUsed`), as a key nothing reads is a mistake.
    private var used: Set<String> = []

    init(base: CredentialFields, reader: AppValueReader) {
        self.base = base
        self.reader = reader
    }

    mutating func credential(for environment: APNsEnvironment, table: CredentialFields?) throws(AppsFileError) -> CredentialSpec {
        let name = environment.rawValue
        let own = table?.values ?? [:]
        let sourceIsOwn = table?.source != nil
        guard let source = table?.source ?? base.source else {
            throw reader.error(name, "no credential: set p12-file, p12-base64, p8-file or p8 in the app or in [app.\(name)]")
        }
        if !sourceIsOwn { used.insert(source) }
        let sourceValue = sourceIsOwn ? own[source] ?? "" : base.values[source] ?? ""
        // A key the environment's table sets, else the app's.
        func value(_ key: String) -> String? {
            if let value = own[key] { return value }
            guard let value = base.values[key] else { return nil }
            used.insert(key)
            return value
        }
        let isCertificate = source == CredentialKeys.p12File || source == CredentialKeys.p12Base64
        let misplaced = isCertificate ? [CredentialKeys.keyID, CredentialKeys.teamID] : [CredentialKeys.p12Password]
        if let key = misplaced.first(where: { own[$0] != nil }) {
            throw reader.error("\(name).\(key)", "does not apply: this environment's credential is \(source)")
        }
        if isCertificate {
            let password = value(CredentialKeys.p12Password) ?? ""
            return source == CredentialKeys.p12File
                ? .p12File(path: sourceValue, password: password) : .p12Base64(sourceValue, password: password)
        }
        let keyID = try required(value(CredentialKeys.keyID), CredentialKeys.keyID, environment: name, sourceIsOwn: sourceIsOwn)
        let teamID = try required(value(CredentialKeys.teamID), CredentialKeys.teamID, environment: name, sourceIsOwn: sourceIsOwn)
        return source == CredentialKeys.p8File
            ? .p8File(path: sourceValue, keyID: keyID, teamID: teamID) : .p8(pem: sourceValue, keyID: keyID, teamID: teamID)
    }

    /// The app's keys no enabled environment took.
    func checkAllUsed() throws(AppsFileError) {
        for key in CredentialKeys.allNames where base.values[key] != nil && !used.contains(key) {
            let why = switch key {
            case CredentialKeys.p12Password: "no environment's credential is p12-file or p12-base64"
            case CredentialKeys.keyID, CredentialKeys.teamID: "no environment's credential is p8-file or p8"
            default: "every enabled environment's table gives its own credential source"
            }
            throw reader.error(key, "is not used: \(why)")
        }
    }

    /// A token key's `key-id` or `team-id`, named where the source was set.
    private func required(_ value: String?, _ key: String, environment: String, sourceIsOwn: Bool) throws(AppsFileError) -> String {
        guard let value else {
            throw reader.error(sourceIsOwn ? "\(environment).\(key)" : key,
                               "is required with p8-file or p8 (in the app or in [app.\(environment)])")
        }
        return value
    }
}

extension CredentialSpec {
    /// Token auth (p8-file or p8), which has no certificate UID to take a
    /// topic from.
    var isToken: Bool {
        switch self {
        case .p8File, .p8: true
        case .p12File, .p12Base64: false
        }
    }

    /// The apps file's key for this credential's source.
    var sourceKey: String {
        switch self {
        case .p12File: CredentialKeys.p12File
        case .p12Base64: CredentialKeys.p12Base64
        case .p8File: CredentialKeys.p8File
        case .p8: CredentialKeys.p8
        }
    }
}
