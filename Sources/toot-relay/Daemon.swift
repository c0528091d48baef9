import APNs
import APNsEmulator
import EventLoop
import Foundation
import Relay
import RelayCore
import TLS

struct Daemon {
    let environment: [String: String]
    let flags: [String: String]
    let demoCertificates: String?

    func run() throws(StartupFailure) {
        ignoreSIGPIPE()
        // Before any thread starts, so only waitForBlockedSignal below takes them.
        do { try SignalSource.block([SIGTERM, SIGINT]) } catch { throw StartupFailure("cannot block signals: \(error)") }

        var values = environment.filter { name, _ in Configuration.variables.contains { $0.name == name } }
        values.merge(flags) { _, flag in flag }
        var configuration: Configuration
        do { configuration = try Configuration(environment: values) } catch { throw StartupFailure(error.description) }
        let logger = Logger(level: configuration.logLevel)

        var emulator: APNsEmulator?
        if let directory = demoCertificates {
            emulator = try startDemoEmulator(directory: directory, values: values, configuration: &configuration,
                                             logger: logger)
        }

        let credentials: APNsCredentials
        do {
            credentials = try loadCredentials(configuration, now: Int(Glibc.time(nil)))
        } catch {
            throw StartupFailure(error.description)
        }
        let apnsTLS: TLSContext
        do { apnsTLS = try credentials.makeTLSContext(caFile: configuration.caFile) } catch {
            throw StartupFailure(error.description)
        }
        logger.info("APNs credentials: \(credentials.logDescription)")
        let certificateExpiry = credentials.tlsIdentity?.notAfter
        if let notAfter = certificateExpiry,
           let (level, message) = CertificateExpiry.check(notAfter: notAfter, now: Int(Glibc.time(nil))) {
            logger.log(level, message)
        }
        logger.info("apns-topic \(credentials.topic); production \(configuration.productionHost), development \(configuration.developmentHost)")

        // HTTPS when the certificate file exists, as the Go relay does (but
        // with the configured name).
        var serverTLS: TLSContext?
        if FileManager.default.fileExists(atPath: configuration.tlsCertificateFile) {
            do {
                let identity = try TLSIdentity.pem(certificateFile: configuration.tlsCertificateFile,
                                                   privateKeyFile: configuration.tlsKeyFile)
                serverTLS = try TLSContext.server(identity: identity, alpn: ["http/1.1"], clientCAFile: nil)
            } catch {
                throw StartupFailure("CRT_FILENAME/KEY_FILENAME (\(configuration.tlsCertificateFile), \(configuration.tlsKeyFile)): \(error)")
            }
        }

        let descriptorLimit = (try? raiseFileDescriptorLimit()) ?? 0
        let threadCount = configuration.threads ?? max(1, ProcessInfo.processInfo.activeProcessorCount)
        let group: EventLoopGroup
        do { group = try EventLoopGroup(count: threadCount, namePrefix: "relay") } catch {
            throw StartupFailure("cannot start event loops: \(error)")
        }

        let clientConfiguration = APNsClientConfiguration(configuration, tlsContext: apnsTLS, credentials: credentials)
        let clients = ClientRegistry()
        var options = ListenerOptions(configuration: configuration)
        if demoCertificates != nil && options.bindAddress == nil { options.bindAddress = "127.0.0.1" }
        let counters = RelayCounters(maxConnections: options.maxConnections, maxInFlight: options.maxInFlight)
        let metricsPort = configuration.metricsPort
        let metrics = metricsPort == nil ? nil : RelayMetrics(counters: counters)
        metrics?.setCredentialExpiry(unixSeconds: certificateExpiry ?? 0)
        let server = RelayServer(options: options, loops: group.loops, tlsContext: serverTLS, topic: credentials.topic,
                                 logger: logger, counters: counters, metrics: metrics) { loop in
            let client = APNsClient(loop: loop, configuration: clientConfiguration)
            clients.add(client, on: loop)
            return client
        }
        let port: UInt16
        do { port = try server.start() } catch {
            group.stopAndJoin()
            throw StartupFailure(error.description)
        }
        let shownHost = options.bindAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "*"
        var metricsServer: MetricsServer?
        if let metrics, let metricsPort {
            metricsServer = try startMetrics(metrics, host: configuration.metricsBindAddress, port: metricsPort,
                                             loop: group.loops[0], logger: logger)
        }
        writeAll(1, "listening on \(shownHost):\(port)\n")
        logger.info("listening on \(shownHost):\(port) (\(serverTLS == nil ? "HTTP" : "HTTPS")), \(threadCount) threads, "
            + "SO_REUSEPORT \(configuration.reusePort ? "on" : "off"), file descriptor limit \(descriptorLimit)")
        notifySystemd("READY=1", logger: logger)

        var expiryMonitor = certificateExpiry.map { CertificateExpiryMonitor(notAfter: $0, startedAt: Int(Glibc.time(nil))) }
        let signal = waitForSignal(every: .seconds(1)) { now in
            if let metrics { refreshAPNsConnections(metrics, clients: clients) }
            if let (level, message) = expiryMonitor?.tick(now: now) { logger.log(level, message) }
            // An expired certificate fails the TLS handshake rather than
            // drawing a 403: the health check says so all the same.
            if expiryMonitor?.isExpired(now: now) == true {
                counters.recordCredentials(rejected: true, succeeded: false)
            }
        }
        notifySystemd("STOPPING=1", logger: logger)
        if let metricsServer {
            let box = UnsafeTransfer(metricsServer)
            group.loops[0].execute { box.value.stop() }
        }
        logger.info("\(signal == SIGTERM ? "SIGTERM" : "SIGINT"): stopping; in flight \(server.counters.inFlight), "
            + "open connections \(server.counters.openConnections), grace \(configuration.shutdownGrace)")
        shutDown(server: server, clients: clients, group: group, grace: configuration.shutdownGrace, logger: logger)
        emulator?.stop()
        logger.info("stopped after \(server.counters.requestsAnswered) requests")
    }

    /// Waits for SIGTERM/SIGINT on the main thread, running `tick` (given
    /// the unix time) every `interval` meanwhile: the periodic work that
    /// belongs to no event loop (metrics gauges, the daily expiry check).
    private func waitForSignal(every interval: Duration, tick: (Int) -> Void) -> Int32 {
        while true {
            if let received = waitForBlockedSignal([SIGTERM, SIGINT], timeout: interval) { return received }
            tick(Int(Glibc.time(nil)))
        }
    }

    /// READY=1 / STOPPING=1 for systemd's `Type=notify` (SystemdNotify).
    private func notifySystemd(_ state: String, logger: Logger) {
        if let problem = SystemdNotify.send(state, socketName: environment["NOTIFY_SOCKET"]) {
            logger.warning(problem)
        }
    }

    private func startMetrics(_ metrics: RelayMetrics, host: String, port: UInt16, loop: EventLoop,
                              logger: Logger) throws(StartupFailure) -> MetricsServer {
        let server = MetricsServer(loop: loop) { metrics.exposition() }
        let result = loop.runAndWait {
            Result { () throws(SocketError) -> UInt16 in try server.start(host: host, port: port) }
        }
        switch result {
        case .success(let boundPort):
            let shown = host.contains(":") ? "[\(host)]" : host
            logger.info("metrics on \(shown):\(boundPort) (GET /metrics)")
            return server
        case .failure(let error):
            throw StartupFailure("METRICS_PORT: cannot listen on \(host) port \(port): \(error)")
        }
    }
}
