import Delivery
import APNs
import EventLoop
import Fleet
import Foundation
import HTTP1
import Locking
import Observability
import Relay
import RelayCore
import TLS

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

        var emulator: DemoEmulator?
        if let demo {
            try startDemoEmulator(demo, values: values, configuration: &configuration, logger: logger)
            emulator = demo.emulator
        }

        // The apps: the one the variables describe and those of
        // APPS_FILE, their credentials checked now.
        let loader = AppsLoader()
        let served = try loadApps(loader, configuration, previous: nil)
        let catalog = APNsCredentialCatalog(caFile: configuration.caFile)
        for (id, credential) in served.credentials { catalog.add(id, credential.authentication) }
        // Without an apps file the one credential's TLS context is made now,
        // as the relay always did (which checks CA_FILENAME too); the apps
        // file's are made at first use, so the roots are checked on their own.
        if configuration.appsFile == nil {
            for id in served.credentials.keys {
                do { _ = try catalog.endpointCredential(id) } catch {
                    throw StartupFailure(APNsStartupError.tls(error).description)
                }
            }
        } else {
            try checkTrustedRoots(configuration)
        }
        for line in served.summaries { logger.info(line) }
        if served.apps.defaultApp == nil {
            logger.info("no default app: /relay-to/<env>/<token> and /push/<token>/<id> answer 503")
        }
        logger.info("APNs production \(configuration.productionHost), development \(configuration.developmentHost)")
        var expiryMonitors = AppExpiryMonitors(served, now: Int(Glibc.time(nil)), logger: logger)

        // HTTPS when the certificate file exists, as the Go relay does (but
        // with the configured name); SIGHUP loads it again.
        var serverCertificate = try loadServerCertificate(configuration)
        let serverTLS = serverCertificate?.context

        let descriptorLimit = (try? raiseFileDescriptorLimit()) ?? 0
        let threadCount = configuration.threads ?? max(1, ProcessInfo.processInfo.activeProcessorCount)
        let group: EventLoopGroup
        do { group = try EventLoopGroup(count: threadCount, namePrefix: "relay") } catch {
            throw StartupFailure("cannot start event loops: \(error)")
        }

        // Each loop's APNs client and context first: every listener's
        // handler on a loop is handed that loop's.
        let clientConfiguration = APNsClientConfiguration(APNsSettings(configuration: configuration), credentials: catalog)
        let clients = PerLoop(loops: group.loops) { APNsClient(loop: $0, configuration: clientConfiguration) }
        var options = ListenerOptions(configuration: configuration)
        if demo != nil && options.bindAddress == nil { options.bindAddress = "127.0.0.1" }
        let connections = HTTP1ListenerCounters(maxConnections: options.maxConnections)
        let deliveries = InFlightDeliveries(maxInFlight: configuration.maxInFlight)
        let metricsPort = configuration.metricsPort
        let metrics = metricsPort == nil ? nil
            : RelayMetrics(connections: connections, maxInFlight: deliveries.maxInFlight, inFlight: { deliveries.inFlight })
        metrics.map { expiryMonitors.publish(to: $0) }
        metrics?.setApps(served.apps)
        let fleet = try startFleet(redisURL, configuration: configuration, logger: logger)
        shareProviderTokens(catalog, fleet: fleet, logger: logger)
        let fleetMetrics = metrics.map { FleetMetrics(registry: $0.registry) }
        let feedback = shareFeedback(try makeFeedbackSink(configuration, logger: logger), fleet: fleet,
                                     configuration: configuration, logger: logger)
        let providerMetrics = metrics.map { ProviderMetrics(registry: $0.registry) }
        let apps = served.apps
        let loopContexts = LoopContexts(loops: group.loops) { loop in
            LoopContext(sender: clients.value(on: loop), apps: apps, logger: logger, loop: loop, metrics: metrics,
                        providerMetrics: providerMetrics)
        }
        let server = HTTP1Listener(options: options, loops: group.loops, tlsContext: serverTLS, loopContexts: loopContexts,
                                   publicURL: configuration.publicURL, logger: logger, counters: connections,
                                   deliveries: deliveries, feedback: feedback)
        let port: UInt16
        do {
            if let socket = sockets.webPush { port = try server.start(acceptingOn: socket) } else { port = try server.start() }
        } catch {
            group.stopAndJoin()
            throw StartupFailure(error.description)
        }
        let shownHost = options.bindAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "*"
        // The provider API: on its own port, never the Web Push one.
        var api: (server: HTTP1Listener<ProviderAPIHandler>, deliveries: InFlightDeliveries, context: ProviderAPIContext,
                  port: UInt16)?
        let asyncQueues = AsyncQueues()
        let fleetAsync = makeFleetAsync(configuration, fleet: fleet, logger: logger)
        if let apiPort = configuration.apiPort {
            let (limits, xmlLimits) = providerLimits(configuration)
            let context = ProviderAPIContext(
                keyring: served.apiKeys,
                provisioned: makeProvisionedApps(catalog, fleet: fleet, logger: logger), feedback: feedback, limits: limits,
                xmlLimits: xmlLimits, provisionDirectory: configuration.apiProvisionDirectory,
                async: AsyncPushes(byDefault: configuration.apiAsync, maxTries: configuration.apiAsyncMaxTries,
                                   maxPending: configuration.apiAsyncMaxPending, shared: fleetAsync?.queue))
            do {
                let (apiServer, apiDeliveries, bound) = try startAPI(
                    configuration, port: apiPort, socket: sockets.api, context: context, loops: group.loops,
                    loopContexts: loopContexts, asyncQueues: asyncQueues, logger: logger)
                api = (apiServer, apiDeliveries, context, bound)
                metrics?.setAPIInFlight { apiDeliveries.inFlight }
                fleetAsync?.start(pushes: context.async, loopContexts: loopContexts, provisioned: context.provisioned,
                                  feedback: feedback, deliveries: apiDeliveries)
            } catch let failure {
                server.beginShutdown()
                group.stopAndJoin()
                throw failure
            }
        }
        var metricsListener: HTTP1Listener<MetricsHandler>?
        if let metrics, let metricsPort {
            metricsListener = try startMetrics(metrics, host: configuration.metricsBindAddress, port: metricsPort,
                                             socket: sockets.metrics, loop: group.loops[0], logger: logger)
        }
        writeAll(1, "listening on \(shownHost):\(port)\n")
        if let api {
            let host = configuration.apiBindAddress
            let shown = host.contains(":") ? "[\(host)]" : host
            writeAll(1, "api on \(shown):\(api.port)\n")
            let keys = served.apiKeys.isEmpty ? "no API keys (loopback only)" : "\(served.apiKeys.entries.count) API keys"
            logger.info("provider API on \(shown):\(api.port) (/api/push, /3/device/<token>, XML-RPC at /, "
                + "/api/feedback/<app>), " + keys)
        }
        let accepting = sockets.webPush != nil ? "every thread accepting on systemd's socket `webpush`"
            : "SO_REUSEPORT \(configuration.reusePort ? "on" : "off")"
        logger.info("listening on \(shownHost):\(port) (\(serverTLS == nil ? "HTTP" : "HTTPS")), \(threadCount) threads, "
            + "\(accepting), file descriptor limit \(descriptorLimit)")
        notifySystemd("READY=1", logger: logger)

        var current = served
        let connectionReport = Locked(APNsConnectionReport())
        let signal = waitForSignal(every: .seconds(1)) { now in
            refreshAPNsStatus(metrics, clients: clients, report: connectionReport, logger: logger)
            if let providerMetrics {
                publishProviderMetrics(providerMetrics, feedback: feedback, async: api?.context.async)
            }
            if let fleet, let fleetMetrics {
                for link in fleet.links {
                    fleetMetrics.publish(link: link.name, isConnected: link.isConnected, failures: link.failureCount)
                }
            }
            expiryMonitors.tick(now: now, apps: current.apps)
        } reload: {
            notifySystemd("RELOADING=1", logger: logger)
            defer { notifySystemd("READY=1", logger: logger) }
            reloadServerCertificate(&serverCertificate, serving: server, logger: logger)
            guard let reloaded = reloadApps(loader, configuration, current: current, catalog: catalog,
                                            serve: { apps in loopContexts.forEach { $0.replaceApps(apps) } },
                                            provisioned: api?.context.provisioned, logger: logger)
            else { return }
            api?.context.replaceKeyring(reloaded.apiKeys)
            current = reloaded
            expiryMonitors = AppExpiryMonitors(reloaded, now: Int(Glibc.time(nil)), logger: logger)
            if let metrics {
                metrics.setApps(reloaded.apps)
                expiryMonitors.publish(to: metrics)
            }
        }
        notifySystemd("STOPPING=1", logger: logger)
        if let metricsListener {
            metricsListener.beginShutdown()
            metricsListener.closeAllConnections()
        }
        logger.info("\(signal == SIGTERM ? "SIGTERM" : "SIGINT"): stopping; in flight \(deliveries.inFlight), "
            + "open connections \(server.counters.openConnections), grace \(configuration.shutdownGrace)")
        fleetAsync?.stop()
        shutDown(servers: [(server, deliveries)] + (api.map { [($0.server, $0.deliveries)] } ?? []), clients: clients, group: group,
                 async: api.map { ($0.context.async, asyncQueues) }, grace: configuration.shutdownGrace, logger: logger)
        // Queued hook posts get a little time; the rest are counted dropped
        // (with Redis: left there for the other instances).
        stopHookOutbox(feedback, logger: logger)
        feedback.hook?.shutdown(within: .seconds(2))
        finishHookOutbox(feedback)
        stopSharedFeedback(feedback, logger: logger)
        closeFleet(fleet, async: fleetAsync, logger: logger)
        emulator?.stop()
        logger.info("stopped after \(server.counters.requestsAnswered) requests")
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
            lines.append("default app: \(app.id) (/relay-to/<env>/<token>, /push/<token>/<id>)")
        } else {
            lines.append("no default app: /relay-to/<env>/<token> and /push/<token>/<id> answer 503")
        }
        lines.append("APNs production \(configuration.productionHost), development \(configuration.developmentHost)")
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
            + "\(served.credentials.count) credential\(served.credentials.count == 1 ? "" : "s")")
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

    private func startMetrics(_ metrics: RelayMetrics, host: String, port: UInt16, socket: Socket?, loop: EventLoop,
                              logger: Logger) throws(StartupFailure) -> HTTP1Listener<MetricsHandler> {
        let listener = HTTP1Listener(metricsOn: host, port: port, loop: loop, warn: { logger.warning($0) }) {
            metrics.exposition()
        }
        do {
            let boundPort = if let socket { try listener.start(acceptingOn: socket) } else { try listener.start() }
            let shown = host.contains(":") ? "[\(host)]" : host
            logger.info("metrics on \(shown):\(boundPort) (GET /metrics)")
            return listener
        } catch {
            throw StartupFailure("METRICS_PORT: \(error.description)")
        }
    }
}
