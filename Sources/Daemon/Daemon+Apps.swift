import APNs
import APNsCore
import AppsFile
import Foundation
import Observability
import Provisioning
import Relay
import RelayCore
import TLS

extension Daemon {
    /// Loads the apps (the variables' app and `APPS_FILE`'s) with their
    /// credentials; one line naming the culprit on any error.
    func loadApps(_ loader: AppsLoader, _ configuration: Configuration,
                  previous: RelayApps?) throws(StartupFailure) -> ServedApps {
        var text: String?
        if let file = configuration.appsFile {
            if let problem = probeAppsFile(file, environment: environment) { throw StartupFailure(problem) }
            // The parser refuses files over its limit; this bounds what is read.
            guard let data = FileManager.default.contents(atPath: file) else {
                throw StartupFailure("APPS_FILE (\(file)): cannot be read")
            }
            text = String(decoding: data.prefix(AppsFileLimits.fileBytes + 1), as: UTF8.self)
        }
        do {
            return try loader.load(configuration: configuration, appsFileText: text, environment: environment,
                                   fileExists: { FileManager.default.fileExists(atPath: $0) },
                                   previous: previous, now: Int(Glibc.time(nil)))
        } catch {
            throw StartupFailure(error.description)
        }
    }

    /// CA_FILENAME (or the system store) can be used: checked once at start,
    /// since the apps file's TLS contexts are made at their first push.
    func checkTrustedRoots(_ configuration: Configuration) throws(StartupFailure) {
        do { _ = try TLSContext.client(trustedRootsFile: configuration.caFile, identity: nil, alpn: ["h2"]) } catch {
            throw StartupFailure(APNsStartupError.tls(error).description)
        }
    }

    /// SIGHUP: loads the apps file and every credential file again. New
    /// credentials join the catalog before the loops route to them; `serve`
    /// then switches every loop's handlers, returning once they route with
    /// the new apps (a request already sent finishes on the connections it
    /// was sent on); credentials no app names any more leave
    /// the catalog, and each loop's client closes their pools once nothing
    /// is left on them. Nil (and the running apps stay) when anything fails
    /// (the loader also refuses a file that leaves a non-loopback API
    /// without a key). Credentials pyapns' `provision` added (`provisioned`)
    /// are not the file's: they stay.
    func reloadApps(_ loader: AppsLoader, _ configuration: Configuration, current: ServedApps,
                    catalog: APNsCredentialCatalog, serve: (RelayApps) -> Void, provisioned: ProvisionedApps?,
                    logger: Logger) -> ServedApps? {
        let reloaded: ServedApps
        do { reloaded = try loadApps(loader, configuration, previous: current.apps) } catch {
            logger.error("SIGHUP: reload failed, the running apps stay: \(error.message)")
            return nil
        }
        var added = 0
        for (id, credential) in reloaded.credentials where !catalog.contains(id) {
            catalog.add(id, credential.authentication)
            added += 1
        }
        serve(reloaded.apps)
        var retired = 0
        for id in catalog.ids where reloaded.credentials[id] == nil && provisioned?.holds(id) != true {
            catalog.remove(id)
            retired += 1
        }
        for line in reloaded.summaries { logger.info(line) }
        logger.info("SIGHUP: reloaded \(reloaded.apps.all.count) app\(reloaded.apps.all.count == 1 ? "" : "s"); "
            + "credentials: \(added) new, \(retired) retired, \(reloaded.credentials.count - added) unchanged")
        return reloaded
    }
}

/// The certificates' expiry, watched per app (and per environment when
/// they differ): the startup line, then daily; an expired one turns its
/// app's health 503 (APNs then refuses the TLS handshake, which is no 403).
struct AppExpiryMonitors {
    private struct Watched {
        var app: String
        /// Nil: the app's one certificate for both environments.
        var environment: APNsEnvironment?
        var monitor: CertificateExpiryMonitor

        /// The variables' app says it as the relay always has.
        var subject: String {
            if app == RelayApp.defaultID && environment == nil { return "APNs client certificate" }
            return "APNs client certificate of app \(app)" + (environment.map { " (\($0.rawValue))" } ?? "")
        }
    }

    private var watched: [Watched] = []
    /// Every app and environment with its not-after (nil: token auth), for the gauges.
    private let expiries: [(app: String, environment: APNsEnvironment, notAfter: Int?)]
    private let logger: Logger

    init(_ served: ServedApps, now: Int, logger: Logger) {
        self.logger = logger
        expiries = served.expiries
        for entry in served.expiries {
            guard let notAfter = entry.notAfter else { continue }
            if let index = watched.firstIndex(where: { $0.app == entry.app && $0.monitor.notAfter == notAfter }) {
                watched[index].environment = nil
                continue
            }
            watched.append(Watched(app: entry.app, environment: entry.environment,
                                   monitor: CertificateExpiryMonitor(notAfter: notAfter, startedAt: now)))
        }
        for entry in watched {
            if let (level, message) = CertificateExpiry.check(notAfter: entry.monitor.notAfter, now: now,
                                                              subject: entry.subject) {
                logger.log(level, message)
            }
        }
    }

    mutating func tick(now: Int, apps: RelayApps) {
        for index in watched.indices {
            let subject = watched[index].subject
            if let (level, message) = watched[index].monitor.tick(now: now, subject: subject) {
                logger.log(level, message)
            }
            if watched[index].monitor.isExpired(now: now) {
                apps.app(for: .id(watched[index].app))?.health.record(.rejected)
            }
        }
    }

    /// The expiry gauges (0 for an environment with token auth).
    func publish(to metrics: RelayMetrics) {
        for entry in expiries {
            metrics.setCredentialExpiry(app: entry.app, environment: entry.environment, unixSeconds: entry.notAfter ?? 0)
        }
    }
}
