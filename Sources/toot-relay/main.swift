// toot-relay: receives Web Push (RFC 8030) from Mastodon servers and
// forwards each still-encrypted payload to APNs (DESIGN §1–§6).
//
// Configuration comes from the environment (the Go relay's variable names);
// each variable has a flag that overrides it. Startup problems are one line
// on stderr and exit status 1. SIGTERM/SIGINT: stop accepting, finish what is
// in flight within SHUTDOWN_GRACE, GOAWAY the APNs connections, exit 0.
// The first stdout line is `listening on HOST:PORT` (PORT=0 picks a free port).
import APNs
import APNsEmulator
import ArgumentParser
import Dispatch
import EventLoop
import Foundation
import Relay
import RelayCore
import Synchronization
import TLS

/// `--help` text for a variable: its meaning, environment name and default.
private func help(_ name: String) -> ArgumentHelp {
    guard let variable = Configuration.variables.first(where: { $0.name == name }) else {
        return ArgumentHelp("env \(name)")
    }
    return ArgumentHelp("\(variable.help) (env \(name), default: \(variable.defaultText))", valueName: "value")
}

struct TootRelayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "toot-relay",
        abstract: "Relays Web Push messages from Mastodon servers to Apple Push Notification service.",
        discussion: """
            Every option mirrors an environment variable (named in its help); a flag wins over \
            the environment. POST /relay-to/<production|development>/<token>[/<extra>] relays; \
            GET /relay-to/_health answers 200 OK (503 while APNs rejects the credentials). \
            The first line on stdout is `listening on HOST:PORT`; PORT=0 picks a free port. \
            SIGTERM/SIGINT: stop accepting, finish in-flight requests within SHUTDOWN_GRACE, \
            exit 0 (a second signal skips the wait).
            """)

    @Option(name: .customLong("port"), help: help("PORT")) var port: String?
    @Option(name: .customLong("bind"), help: help("BIND")) var bind: String?
    @Option(name: .customLong("crt-filename"), help: help("CRT_FILENAME")) var crtFilename: String?
    @Option(name: .customLong("key-filename"), help: help("KEY_FILENAME")) var keyFilename: String?
    @Option(name: .customLong("p12-filename"), help: help("P12_FILENAME")) var p12Filename: String?
    @Option(name: .customLong("p12-base64"), help: help("P12_BASE64")) var p12Base64: String?
    @Option(name: .customLong("p12-password"), help: help("P12_PASSWORD")) var p12Password: String?
    @Option(name: .customLong("token-auth-key-filename"), help: help("TOKEN_AUTH_KEY_FILENAME")) var tokenAuthKeyFilename: String?
    @Option(name: .customLong("token-key-id"), help: help("TOKEN_KEY_ID")) var tokenKeyID: String?
    @Option(name: .customLong("token-team-id"), help: help("TOKEN_TEAM_ID")) var tokenTeamID: String?
    @Option(name: .customLong("topic"), help: help("TOPIC")) var topic: String?
    @Option(name: .customLong("ca-filename"), help: help("CA_FILENAME")) var caFilename: String?
    @Option(name: .customLong("apns-production-host"), help: help("APNS_PRODUCTION_HOST")) var apnsProductionHost: String?
    @Option(name: .customLong("apns-development-host"), help: help("APNS_DEVELOPMENT_HOST")) var apnsDevelopmentHost: String?
    @Option(name: .customLong("max-header-bytes"), help: help("MAX_HEADER_BYTES")) var maxHeaderBytes: String?
    @Option(name: .customLong("max-body-bytes"), help: help("MAX_BODY_BYTES")) var maxBodyBytes: String?
    @Option(name: .customLong("header-timeout"), help: help("HEADER_TIMEOUT")) var headerTimeout: String?
    @Option(name: .customLong("body-timeout"), help: help("BODY_TIMEOUT")) var bodyTimeout: String?
    @Option(name: .customLong("keepalive-timeout"), help: help("KEEPALIVE_TIMEOUT")) var keepaliveTimeout: String?
    @Option(name: .customLong("max-connections"), help: help("MAX_CONNECTIONS")) var maxConnections: String?
    @Option(name: .customLong("max-in-flight"), help: help("MAX_IN_FLIGHT")) var maxInFlight: String?
    @Option(name: .customLong("apns-connect-timeout"), help: help("APNS_CONNECT_TIMEOUT")) var apnsConnectTimeout: String?
    @Option(name: .customLong("apns-timeout"), help: help("APNS_TIMEOUT")) var apnsTimeout: String?
    @Option(name: .customLong("apns-ping-interval"), help: help("APNS_PING_INTERVAL")) var apnsPingInterval: String?
    @Option(name: .customLong("apns-ping-timeout"), help: help("APNS_PING_TIMEOUT")) var apnsPingTimeout: String?
    @Option(name: .customLong("apns-max-connections"), help: help("APNS_MAX_CONNECTIONS")) var apnsMaxConnections: String?
    @Option(name: .customLong("shutdown-grace"), help: help("SHUTDOWN_GRACE")) var shutdownGrace: String?
    @Option(name: .customLong("threads"), help: help("THREADS")) var threads: String?
    @Option(name: .customLong("log-level"), help: help("LOG_LEVEL")) var logLevel: String?
    @Option(name: .customLong("metrics-port"), help: help("METRICS_PORT")) var metricsPort: String?
    @Option(name: .customLong("metrics-bind"), help: help("METRICS_BIND")) var metricsBind: String?
    @Option(name: .customLong("reuse-port"), help: help("REUSE_PORT")) var reusePort: String?
    @Option(name: .customLong("demo"), help: ArgumentHelp(
        "demo: run an embedded APNs emulator on 127.0.0.1 with the throwaway certificates of scripts/make-test-certs in DIR, and print each notification it receives as a JSON line",
        valueName: "dir"))
    var demoCertificates: String?

    /// The flags given, by environment name.
    private var flagValues: [String: String] {
        let pairs: [(String, String?)] = [
            ("PORT", port), ("BIND", bind), ("CRT_FILENAME", crtFilename), ("KEY_FILENAME", keyFilename),
            ("P12_FILENAME", p12Filename), ("P12_BASE64", p12Base64), ("P12_PASSWORD", p12Password),
            ("TOKEN_AUTH_KEY_FILENAME", tokenAuthKeyFilename), ("TOKEN_KEY_ID", tokenKeyID),
            ("TOKEN_TEAM_ID", tokenTeamID), ("TOPIC", topic), ("CA_FILENAME", caFilename),
            ("APNS_PRODUCTION_HOST", apnsProductionHost), ("APNS_DEVELOPMENT_HOST", apnsDevelopmentHost),
            ("MAX_HEADER_BYTES", maxHeaderBytes), ("MAX_BODY_BYTES", maxBodyBytes), ("HEADER_TIMEOUT", headerTimeout),
            ("BODY_TIMEOUT", bodyTimeout), ("KEEPALIVE_TIMEOUT", keepaliveTimeout), ("MAX_CONNECTIONS", maxConnections),
            ("MAX_IN_FLIGHT", maxInFlight), ("APNS_CONNECT_TIMEOUT", apnsConnectTimeout), ("APNS_TIMEOUT", apnsTimeout),
            ("APNS_PING_INTERVAL", apnsPingInterval), ("APNS_PING_TIMEOUT", apnsPingTimeout),
            ("APNS_MAX_CONNECTIONS", apnsMaxConnections), ("SHUTDOWN_GRACE", shutdownGrace), ("THREADS", threads),
            ("LOG_LEVEL", logLevel), ("REUSE_PORT", reusePort), ("METRICS_PORT", metricsPort),
            ("METRICS_BIND", metricsBind),
        ]
        var values: [String: String] = [:]
        for (name, value) in pairs { if let value { values[name] = value } }
        return values
    }

    func run() throws {
        do {
            try Daemon(environment: ProcessInfo.processInfo.environment, flags: flagValues,
                       demoCertificates: demoCertificates).run()
        } catch {
            writeLine(2, "toot-relay: \(error.message)")
            throw ExitCode(1)
        }
    }
}

/// A startup problem: one line, exit status 1.
struct StartupFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// One whole line with write(2) (stdout may be a pipe a test reads).
func writeLine(_ descriptor: Int32, _ text: String) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if written > 0 {
            offset += written
        } else if written < 0 && errno == EINTR {
            continue
        } else {
            return
        }
    }
}

/// The APNs client of each loop, touched only on that loop.
final class ClientRegistry: @unchecked Sendable {
    private let lock = Mutex<[UnsafeTransfer<(EventLoop, APNsClient)>]>([])
    func add(_ client: APNsClient, on loop: EventLoop) {
        let entry = UnsafeTransfer((loop, client))
        lock.withLock { $0.append(entry) }
    }
    var all: [(EventLoop, APNsClient)] { lock.withLock { $0.map(\.value) } }
}

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
        writeLine(1, "listening on \(shownHost):\(port)")
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

    /// Sums every loop's APNs connections by state into the gauges (each
    /// client is read on its own loop; the gauges lag by at most a tick).
    private func refreshAPNsConnections(_ metrics: RelayMetrics, clients: ClientRegistry) {
        let all = clients.all
        let sums = APNsConnectionSums(loops: all.count)
        for (index, (loop, client)) in all.enumerated() {
            let box = UnsafeTransfer(client)
            loop.execute {
                if let total = sums.record(box.value.status.connections, loop: index) {
                    metrics.setAPNsConnections(total)
                }
            }
        }
    }

    /// Stop accepting, let in-flight requests finish (bounded by the grace
    /// period), then GOAWAY and close the APNs connections.
    private func shutDown(server: RelayServer, clients: ClientRegistry, group: EventLoopGroup, grace: Duration,
                          logger: Logger) {
        let deadline = EventLoop.deadline(after: grace, from: EventLoop.monotonicNanoseconds())
        server.beginShutdown()
        var forced = false
        while !server.isDrained && EventLoop.monotonicNanoseconds() < deadline {
            // A second SIGTERM/SIGINT means "now": skip the rest of the grace.
            if let again = waitForBlockedSignal([SIGTERM, SIGINT], timeout: .milliseconds(10)) {
                logger.warning("\(again == SIGTERM ? "SIGTERM" : "SIGINT") again: not waiting for the grace period")
                forced = true
                break
            }
        }
        if !server.isDrained {
            logger.warning("grace period over: closing \(server.counters.openConnections) connections, "
                + "\(server.counters.inFlight) notifications still in flight")
            server.closeAllConnections()
        }
        let closed = DispatchSemaphore(value: 0)
        let all = clients.all
        for (loop, client) in all {
            let box = UnsafeTransfer(client)
            loop.execute { box.value.shutdown { closed.signal() } }
        }
        // GOAWAY, then the open streams may finish: at most the rest of the
        // grace period plus a second.
        let now = EventLoop.monotonicNanoseconds()
        let remaining = forced ? 1_000_000_000 : max(deadline, now) - now + 1_000_000_000
        let waitUntil = DispatchTime.now() + .nanoseconds(Int(remaining))
        for _ in all where closed.wait(timeout: waitUntil) == .timedOut {
            logger.warning("APNs connections did not close in time")
            break
        }
        // The loops batch their request lines; none may be lost at exit.
        server.flushLogs()
        group.stopAndJoin()
    }

    /// Demo: an APNs emulator in this process on 127.0.0.1, trusting the
    /// throwaway CA, with the relay pointed at it and the throwaway p12.
    private func startDemoEmulator(directory: String, values: [String: String], configuration: inout Configuration,
                                   logger: Logger) throws(StartupFailure) -> APNsEmulator {
        let path = { (name: String) in directory + "/" + name }
        let emulatorConfiguration = APNsEmulatorConfiguration(
            host: "127.0.0.1", port: 0, certificateFile: path("server.pem"), privateKeyFile: path("server.key"),
            authentication: .clientCertificate(caFile: path("ca.pem")))
        let emulator: APNsEmulator
        do {
            emulator = try APNsEmulator(configuration: emulatorConfiguration)
            emulator.onNotification = { notification in writeLine(1, notification.jsonLine) }
            try emulator.start()
        } catch {
            throw StartupFailure("demo APNs emulator: \(error)")
        }
        let host = HostAndPort(host: "127.0.0.1", port: emulator.port)
        configuration.productionHost = host
        configuration.developmentHost = host
        configuration.caFile = path("ca.pem")
        if values["P12_FILENAME"] == nil && values["P12_BASE64"] == nil && values["TOKEN_AUTH_KEY_FILENAME"] == nil {
            configuration.p12File = path("client.p12")
            if values["P12_PASSWORD"] == nil { configuration.p12Password = "secret" }
        }
        logger.info("demo: APNs emulator on \(host)")
        return emulator
    }
}

/// Collects one snapshot of APNs connection states per loop and hands back
/// the sum once every loop has answered.
final class APNsConnectionSums: Sendable {
    private let state: Mutex<(answered: Int, total: [APNsConnectionState: Int])>
    private let loops: Int

    init(loops: Int) {
        self.loops = loops
        state = Mutex((0, [:]))
    }

    func record(_ connections: [APNsConnectionState: Int], loop: Int) -> [APNsConnectionState: Int]? {
        state.withLock { state in
            state.answered += 1
            state.total.merge(connections, uniquingKeysWith: +)
            return state.answered == loops ? state.total : nil
        }
    }
}

/// Hands a loop-confined object to its own loop's task queue.
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

TootRelayCommand.main()
