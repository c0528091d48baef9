import APNs
import APNsCore
import AppsFile
import Delivery
import FCMCore
import ProviderAPI
import RelayCore

/// Why the apps could not be loaded: one line naming where (the variable,
/// or the apps file, app and key) and what. Startup stops; a reload keeps
/// the running apps.
struct AppsLoadError: Error, Equatable, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The apps the relay serves, loaded: what the loops route with, the
/// credentials they name, and what the log and `check-config` show.
struct ServedApps: Sendable {
    var apps: RelayApps
    var credentials: [CredentialID: LoadedCredential]
    /// One log-safe line per app and environment (ARCHITECTURE.md §7).
    var summaries: [String]
    /// Each app's credential per enabled environment: its certificate's
    /// not-after (unix seconds), nil with token auth.
    var expiries: [(app: String, environment: APNsEnvironment, notAfter: Int?)]
    /// The provider API's keys: `API_KEYS` and the apps file's
    /// `[[api-key]]` entries, as loaded with these apps; a reload replaces
    /// them with the file's new ones.
    var apiKeys: APIKeyring
    /// `/3/device/`'s token keys and client certificates, from these apps'
    /// credentials (`proxyCredentials`).
    var proxyCredentials: ProxyCredentials = .none
}

/// Loads the apps from the environment's app and the apps file,
/// with the provider API's keys, and keeps, across reloads,
/// which credential got which id: a credential whose spec and file bytes
/// are unchanged keeps its id, so its connections stay; a changed one gets
/// a new id, and new connections.
///
/// Not thread-safe: the daemon's main thread owns it.
final class AppsLoader {
    private var ids: [CredentialFingerprint: CredentialID] = [:]
    private var nextID = 1

    init() {}

    /// - Parameters:
    ///   - configuration: the variables (`APPS_FILE`, the default app's credential).
    ///   - appsFileText: the apps file's contents, when `APPS_FILE` is set.
    ///   - environment: the process environment, for `${NAME}` in the file.
    ///   - fileExists: whether a path exists (the default `toot-relay.p12`).
    ///   - previous: the apps served until now: an app keeps its health.
    ///   - now: unix seconds.
    ///   - readFCMFile: a service account's file, nil when it cannot be read.
    func load(configuration: Configuration, appsFileText: String?, environment: [String: String],
              fileExists: (String) -> Bool, previous: RelayApps?, now: Int,
              readFCMFile: (String) -> [UInt8]? = AppsLoader.readServiceAccountFile) throws(AppsLoadError) -> ServedApps {
        var contents = AppsFileContents(apps: [])
        if let file = configuration.appsFile {
            guard let text = appsFileText else { throw AppsLoadError("APPS_FILE (\(file)): cannot be read") }
            do { contents = try AppsFile.parse(text, file: file, environment: environment) } catch {
                throw AppsLoadError(error.description)
            }
        }
        let fileApps = contents.apps
        var loaded: [CredentialFingerprint: (CredentialID, LoadedCredential)] = [:]
        func register(_ credential: LoadedCredential) -> CredentialID {
            if let (id, _) = loaded[credential.fingerprint] { return id }
            let id: CredentialID
            if let known = ids[credential.fingerprint] {
                id = known
            } else {
                id = CredentialID(nextID)
                nextID += 1
            }
            loaded[credential.fingerprint] = (id, credential)
            return id
        }

        var apps: [RelayApp] = []
        var summaries: [String] = []
        var expiries: [(app: String, environment: APNsEnvironment, notAfter: Int?)] = []
        var defaultAppID: String?
        func health(_ id: String) -> any CredentialHealth { previous?.app(for: .id(id))?.health ?? AppHealth() }
        func fcm(_ id: String, _ account: FCMServiceAccount) -> FCMAppCredentials {
            FCMAppCredentials(account: account, health: previous?.app(for: .id(id))?.fcm?.health ?? AppHealth())
        }

        // The app the variables describe: always without an apps file (as
        // the relay has always been); with one, only when they name a
        // credential (or the default toot-relay.p12 exists). FCM's variables
        // alone describe an app without APNs (an Android app).
        let defaultFCM = try Self.defaultFCMAccount(configuration, readFile: readFCMFile)
        let describesAPNs = configuration.describesApp(fileExists: fileExists)
        if configuration.appsFile == nil || describesAPNs || defaultFCM != nil {
            var app: RelayApp
            if describesAPNs || defaultFCM == nil {
                let credential: LoadedCredential
                do { credential = try loadCredential(configuration.credentialSpec, now: now) } catch {
                    throw AppsLoadError(error.description)
                }
                let id = register(credential)
                let topic = configuration.effectiveTopic(certificateUID: credential.certificateUID)
                app = RelayApp(topic: topic, production: id, development: id, health: health(RelayApp.defaultID))
                if let keyID = credential.keyID { app.keyIDs = [.production: keyID, .development: keyID] }
                for environment in [APNsEnvironment.production, .development] {
                    summaries.append(Self.summary(app, environment, credential, isDefault: true))
                    expiries.append((app.id, environment, credential.notAfter))
                }
            } else {
                app = RelayApp(topic: configuration.topic ?? "", production: nil, development: nil,
                               health: health(RelayApp.defaultID))
            }
            if let defaultFCM {
                app.fcm = fcm(app.id, defaultFCM.account)
                summaries.append(Self.fcmSummary(app: app.id, account: defaultFCM.account, source: defaultFCM.source,
                                                 isDefault: true))
            }
            apps.append(app)
            defaultAppID = app.id
        }

        var retired: [RetiredApp] = []
        for definition in fileApps where definition.isRetired {
            if let other = apps.first(where: { $0.id == definition.id || $0.topic == definition.topic }) {
                throw AppsLoadError("\(configuration.appsFile ?? ""): app \"\(definition.id)\", key \"id\": "
                    + "app \"\(other.id)\" of the environment variables has its id or topic")
            }
            retired.append(RetiredApp(id: definition.id, topic: definition.topic))
            let topic = definition.topic.map { ", /push/\($0)/<token>/<id>" } ?? ""
            summaries.append("app \(definition.id): retired (its URLs answer 410, so servers drop their subscriptions: "
                + "/relay-to/\(definition.id)/…, /push/\(definition.id)/<token>/<id>\(topic))")
        }
        for definition in fileApps where !definition.isRetired {
            var credentialIDs: [APNsEnvironment: CredentialID] = [:]
            var credentials: [APNsEnvironment: LoadedCredential] = [:]
            for environment in [APNsEnvironment.production, .development] {
                guard let spec = definition.credentials[environment] else { continue }
                let names = CredentialNames.appsFile(configuration.appsFile ?? "", app: definition.id,
                                                     environment: environment)
                do {
                    let credential = try loadCredential(spec, names: names, now: now)
                    credentials[environment] = credential
                    credentialIDs[environment] = register(credential)
                } catch {
                    throw AppsLoadError(error.description)
                }
            }
            let account = try definition.fcmCredentials.map { path throws(AppsLoadError) in
                try Self.appFCMAccount(path, appsFile: configuration.appsFile ?? "", app: definition.id,
                                       readFile: readFCMFile)
            }
            let uid = credentials[.production]?.certificateUID ?? credentials[.development]?.certificateUID
            // An app with FCM credentials only needs no topic.
            guard let topic = definition.topic ?? uid ?? (definition.credentials.isEmpty ? "" : nil) else {
                throw AppsLoadError("\(configuration.appsFile ?? ""): app \"\(definition.id)\", key \"topic\": "
                    + "is required: the certificate names no app (it has no subject UID)")
            }
            if !topic.isEmpty, let other = apps.first(where: { $0.topic == topic }) {
                throw AppsLoadError("\(configuration.appsFile ?? ""): app \"\(definition.id)\", key \"topic\": "
                    + "\(topic) is already the topic of app \"\(other.id)\"")
            }
            if let other = retired.first(where: { $0.topic == topic || $0.id == topic }) {
                throw AppsLoadError("\(configuration.appsFile ?? ""): app \"\(definition.id)\", key \"topic\": "
                    + "\(topic) is the id or topic of the retired app \"\(other.id)\"")
            }
            let isDefault = definition.isDefault && defaultAppID == nil
            var app = RelayApp(id: definition.id, topic: topic, alert: definition.alert,
                               production: credentialIDs[.production], development: credentialIDs[.development],
                               restrictedOnly: definition.restrictedOnly, health: health(definition.id))
            app.keyIDs = credentials.compactMapValues(\.keyID)
            if let account { app.fcm = fcm(app.id, account) }
            apps.append(app)
            if isDefault { defaultAppID = app.id }
            if let account, let path = definition.fcmCredentials {
                summaries.append(Self.fcmSummary(app: app.id, account: account, source: path, isDefault: isDefault))
            }
            for environment in [APNsEnvironment.production, .development] where app.servesAPNs {
                guard let credential = credentials[environment] else {
                    summaries.append("app \(app.id) \(environment.rawValue): disabled (its pushes get 404)")
                    continue
                }
                summaries.append(Self.summary(app, environment, credential, isDefault: isDefault))
                expiries.append((app.id, environment, credential.notAfter))
            }
        }

        let apiKeys = try Self.apiKeyring(configuration: configuration, fileKeys: contents.apiKeys,
                                          hasDefaultApp: apps.contains { $0.id == RelayApp.defaultID })

        ids = loaded.mapValues(\.0)
        var byID: [CredentialID: LoadedCredential] = [:]
        for (id, credential) in loaded.values { byID[id] = credential }
        return ServedApps(apps: RelayApps(apps, defaultAppID: defaultAppID, retired: retired), credentials: byID,
                          summaries: summaries, expiries: expiries, apiKeys: apiKeys,
                          proxyCredentials: try proxyCredentials(apps: apps, credentials: byID,
                                                                 apiKeys: apiKeys.entries))
    }

    /// `API_KEYS` and the file's keys as one keyring: a file key naming
    /// the app `default` needs the variables to describe one (the file's
    /// parser cannot know), no key is in both, and the API is not exposed
    /// without a key (`apiExposureProblem`).
    static func apiKeyring(configuration: Configuration, fileKeys: [APIKeyEntry], hasDefaultApp: Bool)
        throws(AppsLoadError) -> APIKeyring {
        func namesDefault(_ entry: APIKeyEntry) -> Bool {
            if case .only(let ids) = entry.apps { ids.contains(RelayApp.defaultID) } else { false }
        }
        if !hasDefaultApp, let entry = fileKeys.first(where: namesDefault) {
            throw AppsLoadError(AppsFileError(
                file: configuration.appsFile ?? "", apiKey: entry.name, key: "apps",
                message: "names \"default\", but the environment variables describe no app (no P12_FILENAME, "
                    + "P12_BASE64 or TOKEN_* credential)").description)
        }
        let keyring: APIKeyring
        do { keyring = try APIKeyring(APIKeyEntry.fromVariable(configuration.apiKeys) + fileKeys) } catch {
            throw AppsLoadError(error.description)
        }
        if let problem = apiExposureProblem(configuration: configuration, keyring: keyring) {
            throw AppsLoadError(problem)
        }
        return keyring
    }

    /// `app toot production: topic cx.c3.toot, certificate auth (…), via
    /// /relay-to/toot/production/<token>, /push/toot/<token>/<id>`.
    static func summary(_ app: RelayApp, _ environment: APNsEnvironment, _ credential: LoadedCredential,
                        isDefault: Bool) -> String {
        let sandbox = environment == .development ? "?sandbox=true" : ""
        var urls: [String] = []
        if isDefault {
            urls.append("/relay-to/\(environment.rawValue)/<token>")
            urls.append("/push/<token>/<id>\(sandbox)")
        }
        urls.append("/relay-to/\(app.id)/\(environment.rawValue)/<token>")
        urls.append("/push/\(app.id)/<token>/<id>\(sandbox)")
        return "app \(app.id) \(environment.rawValue)\(isDefault ? " (default app)" : ""): topic \(app.topic), "
            + "\(credential.summary) from \(credential.fingerprint.spec.source), via \(urls.joined(separator: ", "))"
    }
}
