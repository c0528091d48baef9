import EventLoop
import Foundation
import Observability
import RelayCore

/// The relay as a process: its configuration (the environment, flags
/// winning), start-up, signals (SIGHUP reloads; SIGTERM/SIGINT stop it), and
/// `check-config`.
public struct Daemon {
    let environment: [String: String]
    let flags: [String: String]
    let demo: Demo?
    /// The listening sockets systemd passed (LISTEN_FDS), if any.
    var passedSockets: SocketActivation.Passed = .none

    public init(environment: [String: String], flags: [String: String], demo: Demo?,
                passedSockets: SocketActivation.Passed = .none) {
        self.environment = environment
        self.flags = flags
        self.demo = demo
        self.passedSockets = passedSockets
    }

    public func run() throws(StartupFailure) {
        ignoreSIGPIPE()
        // Before any thread starts, so only waitForBlockedSignal below takes them.
        do { try SignalSource.block([SIGTERM, SIGINT, SIGHUP]) } catch { throw StartupFailure("cannot block signals: \(error)") }

        let values = variableValues
        var configuration = try makeConfiguration(values)
        let redisURL = try redisURL(configuration)
        let logger = Logger(level: configuration.logLevel)
        let sockets = try PassedListeners(passedSockets, configuration: &configuration, logger: logger)
        let services = ServiceList(logger: logger)
        let started: StartedRelay
        do throws(StartupFailure) {
            started = try start(&configuration, values: values, redisURL: redisURL, sockets: sockets,
                                services: services, logger: logger)
        } catch {
            services.shutDown(grace: .zero)
            throw error
        }
        notifySystemd("READY=1", logger: logger)

        var current = started.served
        var expiryMonitors = started.expiryMonitors
        var serverCertificate = started.serverCertificate
        var apiCertificate = started.api?.certificate
        let signal = waitForSignal(every: .seconds(1)) { now in
            services.tick(now: now)
            expiryMonitors.tick(now: now, apps: current.apps)
        } reload: {
            notifySystemd("RELOADING=1", logger: logger)
            defer { notifySystemd("READY=1", logger: logger) }
            reloadServerCertificate(&serverCertificate, serving: started.webPush, logger: logger)
            if let api = started.api {
                reloadServerCertificate(&apiCertificate, named: "API_CRT_FILENAME/API_KEY_FILENAME", serving: api.listener,
                                        logger: logger)
            }
            guard let reloaded = reloadApps(started.loader, configuration, current: current, catalog: started.catalog,
                                            serve: { apps in started.loopContexts.forEach { $0.replaceApps(apps) } },
                                            provisioned: started.api?.context.provisioned, logger: logger)
            else { return }
            keepFCMAccounts(of: reloaded.apps, in: started.fcmAccessTokens)
            started.api?.context.replaceKeyring(reloaded.apiKeys)
            started.api?.context.replaceProxyCredentials(reloaded.proxyCredentials)
            current = reloaded
            expiryMonitors = AppExpiryMonitors(reloaded, now: Int(Glibc.time(nil)), logger: logger)
            if let metrics = started.metrics {
                metrics.setApps(reloaded.apps)
                expiryMonitors.publish(to: metrics)
            }
        }
        notifySystemd("STOPPING=1", logger: logger)
        logger.info("\(signal == SIGTERM ? "SIGTERM" : "SIGINT"): stopping; in flight \(started.deliveries.inFlight), "
            + "open connections \(started.webPush.counters.openConnections), grace \(configuration.shutdownGrace)")
        services.shutDown(grace: configuration.shutdownGrace)
        logger.info("stopped after \(started.webPush.counters.requestsAnswered) requests")
    }

    /// The configuration variables: the environment's, flags winning.
    private var variableValues: [String: String] {
        var values = environment.filter { name, _ in Configuration.variables.contains { $0.name == name } }
        values.merge(flags) { _, flag in flag }
        return values
    }

    private func makeConfiguration(_ values: [String: String]) throws(StartupFailure) -> Configuration {
        do { return try Configuration(environment: values) } catch { throw StartupFailure(error.description) }
    }

    /// `check-config`: everything `run` loads before it listens, and the
    /// lines that describe it (no secrets).
    public func checkConfig() throws(StartupFailure) -> [String] {
        let configuration = try makeConfiguration(variableValues)
        let redis = try redisURL(configuration)
        let served = try loadApps(AppsLoader(), configuration, previous: nil)
        try checkTrustedRoots(configuration)
        var lines = served.summaries
        if let app = served.apps.defaultApp {
            let urls = (app.servesAPNs ? ["/relay-to/<env>/<token>", "/push/<token>/<id>"] : [])
                + (app.fcm != nil ? ["/relay-to/fcm/<token>"] : [])
            lines.append("default app: \(app.id) (\(urls.joined(separator: ", ")))")
        } else {
            lines.append("no default app: /relay-to/<env>/<token> and /push/<token>/<id> answer 503")
        }
        lines.append("APNs production \(configuration.productionHost), development \(configuration.developmentHost)")
        let fcmApps = served.apps.all.filter { $0.fcm != nil }.count
        if fcmApps > 0 {
            lines.append("FCM \(configuration.fcmHost) for \(fcmApps) app\(fcmApps == 1 ? "" : "s"), answer timeout "
                + "\(configuration.fcmAnswerTimeout), \(configuration.fcmMaxConnections) connections per service "
                + "account and thread")
        }
        if let origin = configuration.publicURL {
            lines.append("restricted endpoints: a VAPID aud must name \(origin) (PUBLIC_URL)")
        } else {
            lines.append("restricted endpoints: a VAPID aud must name each request's origin: https when the relay "
                + "serves TLS, else X-Forwarded-Proto (else http), and the Host header (PUBLIC_URL unset)")
        }
        if let apiPort = configuration.apiPort {
            let keys = served.apiKeys.entries.map { entry in
                switch entry.apps {
                case .all: "\(entry.name) (every app)"
                case .only(let ids): "\(entry.name) (\(ids.joined(separator: ", ")))"
                }
            }
            lines.append("provider API on \(configuration.apiBindAddress) port \(apiPort): "
                + (keys.isEmpty ? "no API keys (loopback only)" : "API keys " + keys.joined(separator: "; ")))
        }
        if let redis {
            lines.append("several instances: Redis \(redis), claim after \(configuration.redisClaimIdle) idle (REDIS_URL)")
        }
        lines.append("configuration OK: \(served.apps.all.count) app\(served.apps.all.count == 1 ? "" : "s"), "
            + "\(served.credentials.count) credential\(served.credentials.count == 1 ? "" : "s")"
            + (fcmApps > 0 ? ", \(fcmApps) FCM service account\(fcmApps == 1 ? "" : "s")" : ""))
        return lines
    }

    /// Waits for SIGTERM/SIGINT on the main thread, running `tick` (given
    /// the unix time) every `interval` meanwhile: the periodic work that
    /// belongs to no event loop (metrics gauges, the daily expiry check);
    /// and `reload` on each SIGHUP.
    private func waitForSignal(every interval: Duration, tick: (Int) -> Void, reload: () -> Void) -> Int32 {
        while true {
            switch waitForBlockedSignal([SIGTERM, SIGINT, SIGHUP], timeout: interval) {
            case SIGHUP: reload()
            case let received?: return received
            case nil: tick(Int(Glibc.time(nil)))
            }
        }
    }

    /// READY=1 / STOPPING=1 for systemd's `Type=notify` (SystemdNotify).
    private func notifySystemd(_ state: String, logger: Logger) {
        if let problem = SystemdNotify.send(state, socketName: environment["NOTIFY_SOCKET"]) {
            logger.warning(problem)
        }
    }
}
