import AsyncPush
import HTTPCore
import APNsCore
import APNs
import Delivery
import EventLoop
import FCM
import FCMCore
import Fleet
import Foundation
import HTTP1
import Observability
import Redis
import Relay
import RelayCore
import TLS

/// What start-up made that the tick, a reload and the last lines reach.
struct StartedRelay {
    let loader: AppsLoader
    /// The apps loaded at start (a reload replaces them).
    let served: ServedApps
    let catalog: APNsCredentialCatalog
    /// The expiry of the apps' certificates, watched (a reload replaces it).
    let expiryMonitors: AppExpiryMonitors
    /// CRT_FILENAME/KEY_FILENAME's certificate, nil for plain HTTP.
    let serverCertificate: ServerCertificate?
    let loopContexts: LoopContexts
    let metrics: RelayMetrics?
    let webPush: HTTP1Listener<WebPushHandler>
    let deliveries: InFlightDeliveries
    let port: UInt16
    /// The provider API, with API_PORT (its certificate with API_CRT_FILENAME).
    let api: (context: ProviderAPIContext, port: UInt16, listener: HTTP1Listener<ProviderAPIHandler>,
              certificate: ServerCertificate?)?
    /// The process's FCM access tokens (a reload drops accounts from them).
    let fcmAccessTokens: FCMAccessTokens
}

extension Daemon {
    /// Loads the apps and starts the relay's services, in this order, each
    /// added to `services` once it runs, so that shutdown stops them in the
    /// reverse order: the demo's emulator; the fleet's links (REDIS_URL);
    /// the feedback lists and hook; the event loops; each loop's context
    /// (its APNs client and log buffer); the Web Push listener; the provider
    /// API's asynchronous queue and listener; the fleet's asynchronous
    /// deliveries; the metrics listener. On a failure, what already started
    /// is the caller's to stop.
    func start(_ configuration: inout Configuration, values: [String: String], redisURL: RedisURL?,
               sockets: PassedListeners, services: ServiceList, logger: Logger) throws(StartupFailure) -> StartedRelay {
        if let demo {
            try startDemoEmulator(demo, values: values, configuration: &configuration, logger: logger)
            services.append(ServiceSteps(stop: { _ in demo.emulator.stop() }))
        }
        let (loader, served, catalog) = try loadServedApps(configuration, logger: logger)
        let expiryMonitors = AppExpiryMonitors(served, now: Int(Glibc.time(nil)), logger: logger)
        // HTTPS when the certificate file exists, as the Go relay does (but
        // with the configured name); SIGHUP loads it again.
        let serverCertificate = try loadServerCertificate(configuration)

        var options = ListenerOptions(configuration: configuration)
        if demo != nil && options.bindAddress == nil { options.bindAddress = "127.0.0.1" }
        let connections = HTTP1ListenerCounters(maxConnections: options.maxConnections)
        let deliveries = InFlightDeliveries(maxInFlight: configuration.maxInFlight)
        let metrics = configuration.metricsPort == nil ? nil
            : RelayMetrics(connections: connections, maxInFlight: deliveries.maxInFlight, inFlight: { deliveries.inFlight })
        metrics.map { expiryMonitors.publish(to: $0) }
        metrics?.setApps(served.apps)
        let providerMetrics = metrics.map { ProviderMetrics(registry: $0.registry) }

        let fleet = try startFleet(redisURL, configuration: configuration, logger: logger)
        let fleetAsync = makeFleetAsync(configuration, fleet: fleet, logger: logger)
        if let fleet {
            services.append(fleetService(fleet, async: fleetAsync, metrics: metrics.map { FleetMetrics(registry: $0.registry) },
                                         logger: logger))
        }
        shareProviderTokens(catalog, fleet: fleet, logger: logger)
        let feedbackParts = try makeFeedback(configuration, fleet: fleet, logger: logger)
        let feedback = feedbackParts.sink
        services.append(feedbackService(feedbackParts, metrics: providerMetrics, logger: logger))

        let descriptorLimit = (try? raiseFileDescriptorLimit()) ?? 0
        let threadCount = configuration.threads ?? max(1, ProcessInfo.processInfo.activeProcessorCount)
        let group: EventLoopGroup
        do { group = try EventLoopGroup(count: threadCount, namePrefix: "relay") } catch {
            throw StartupFailure("cannot start event loops: \(error)")
        }
        services.append(ServiceSteps(stop: { _ in group.stopAndJoin() }))
        // Each loop's APNs client and context first: every listener's
        // handler on a loop is handed that loop's.
        let clientConfiguration = APNsClientConfiguration(APNsSettings(configuration: configuration), credentials: catalog)
        let clients = PerLoop(loops: group.loops) { APNsClient(loop: $0, configuration: clientConfiguration) }
        let apps = served.apps
        // Each loop's FCM client, whether or not an app has FCM credentials
        // yet: a reload may give one some, and a client opens no connection
        // before its first message.
        let (fcmClients, fcmAccessTokens) = try makeFCMClients(configuration, loops: group.loops, fleet: fleet,
                                                               logger: logger)
        let loopContexts = LoopContexts(loops: group.loops) { loop in
            LoopContext(sender: clients.value(on: loop), fcmSender: fcmClients.value(on: loop), apps: apps,
                        logger: logger, loop: loop, metrics: metrics, providerMetrics: providerMetrics)
        }
        services.append(LoopContextsService(clients: clients, fcmClients: fcmClients, contexts: loopContexts,
                                            metrics: metrics, logger: logger))

        let server = HTTP1Listener(options: options, loops: group.loops, tlsContext: serverCertificate?.context,
                                   loopContexts: loopContexts, publicURL: configuration.publicURL, logger: logger,
                                   counters: connections, deliveries: deliveries, feedback: feedback)
        let port: UInt16
        do {
            if let socket = sockets.webPush { port = try server.start(acceptingOn: socket) } else { port = try server.start() }
        } catch {
            throw StartupFailure(error.description)
        }
        services.append(ListenerService(draining: server, deliveries: deliveries, logger: logger))

        // The provider API: on its own port, never the Web Push one.
        var api: (context: ProviderAPIContext, port: UInt16, listener: HTTP1Listener<ProviderAPIHandler>,
                  certificate: ServerCertificate?)?
        if let apiPort = configuration.apiPort {
            let apiCertificate = try loadAPICertificate(configuration)
            let (limits, xmlLimits) = providerLimits(configuration)
            let context = ProviderAPIContext(
                keyring: served.apiKeys,
                provisioned: makeProvisionedApps(catalog, fleet: fleet, logger: logger), feedback: feedback, limits: limits,
                xmlLimits: xmlLimits, provisionDirectory: configuration.apiProvisionDirectory,
                async: AsyncPushes(byDefault: configuration.apiAsync, maxTries: configuration.apiAsyncMaxTries,
                                   maxPending: configuration.apiAsyncMaxPending, shared: fleetAsync?.queue))
            context.replaceProxyCredentials(served.proxyCredentials)
            services.append(AsyncPushesService(context.async, metrics: providerMetrics, logger: logger))
            let (apiServer, apiDeliveries, bound) = try startAPI(
                configuration, port: apiPort, socket: sockets.api, context: context, certificate: apiCertificate,
                loops: group.loops,
                loopContexts: loopContexts, logger: logger)
            services.append(ListenerService(draining: apiServer, deliveries: apiDeliveries, logger: logger))
            api = (context, bound, apiServer, apiCertificate)
            metrics?.setAPIInFlight { apiDeliveries.inFlight }
            if let fleetAsync {
                fleetAsync.start(pushes: context.async)
                // Reads nothing more from the fleet's stream once shutdown begins.
                services.append(ServiceSteps(stopAccepting: { fleetAsync.stop() }))
            }
        }
        if let metrics, let metricsPort = configuration.metricsPort {
            let listener = try startMetrics(metrics, host: configuration.metricsBindAddress, port: metricsPort,
                                            socket: sockets.metrics, loop: group.loops[0], logger: logger)
            services.append(ListenerService(closingAtOnce: listener, logger: logger))
        }
        let started = StartedRelay(loader: loader, served: served, catalog: catalog, expiryMonitors: expiryMonitors,
                                   serverCertificate: serverCertificate, loopContexts: loopContexts, metrics: metrics,
                                   webPush: server, deliveries: deliveries, port: port, api: api,
                                   fcmAccessTokens: fcmAccessTokens)
        announce(started, configuration: configuration, options: options, sockets: sockets, threads: threadCount,
                 descriptorLimit: descriptorLimit, logger: logger)
        return started
    }

    /// The first lines on standard output (`listening on HOST:PORT`, then
    /// `api on HOST:PORT` with API_PORT), and the log's.
    private func announce(_ started: StartedRelay, configuration: Configuration, options: ListenerOptions,
                          sockets: PassedListeners, threads: Int, descriptorLimit: UInt64, logger: Logger) {
        let shownHost = options.bindAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "*"
        writeAll(1, "listening on \(shownHost):\(started.port)\n")
        if let api = started.api {
            let host = configuration.apiBindAddress
            let shown = host.contains(":") ? "[\(host)]" : host
            writeAll(1, "api on \(shown):\(api.port)\n")
            let keys = started.served.apiKeys
            logger.info("provider API on \(shown):\(api.port) (\(api.certificate == nil ? "HTTP" : "HTTPS"), HTTP/1.1 and HTTP/2; /api/push, /3/device/<token>, XML-RPC at /, "
                + "/api/feedback/<app>), " + (keys.isEmpty ? "no API keys (loopback only)" : "\(keys.entries.count) API keys"))
        }
        let accepting = sockets.webPush != nil ? "every thread accepting on systemd's socket `webpush`"
            : "SO_REUSEPORT \(configuration.reusePort ? "on" : "off")"
        logger.info("listening on \(shownHost):\(started.port) (\(started.serverCertificate == nil ? "HTTP" : "HTTPS")), "
            + "\(threads) threads, \(accepting), file descriptor limit \(descriptorLimit)")
    }

    /// The apps: the one the variables describe and those of APPS_FILE,
    /// their credentials checked now, in a catalog.
    private func loadServedApps(_ configuration: Configuration, logger: Logger)
        throws(StartupFailure) -> (AppsLoader, ServedApps, APNsCredentialCatalog) {
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
        return (loader, served, catalog)
    }

    private func startMetrics(_ metrics: RelayMetrics, host: String, port: UInt16, socket: Socket?, loop: EventLoop,
                              logger: Logger) throws(StartupFailure) -> HTTP1Listener<MetricsHandler> {
        let listener = HTTP1Listener(metricsOn: host, port: port, loop: loop, logger: logger) {
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
