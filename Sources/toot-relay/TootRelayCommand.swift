import ArgumentParser
import Daemon
import EventLoop
import Foundation
import RelayCore

// The command line: one option per configuration variable (its help text
// and default from `Configuration.variables`), mapped back to the
// variables' names for `Daemon`.

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
            the environment. POST /relay-to/[<app>/]<production|development>/<token>[/<extra>] \
            relays (toot-relay payload); POST /push/[<app-or-topic>/]<token>/<id>[?sandbox=true] \
            relays in metatext-apns' payload; without <app> the default app. APPS_FILE (TOML) \
            adds apps. GET /relay-to/_health answers 200 OK (503 while APNs rejects the \
            credentials of every app); GET /relay-to/_health/<app> answers for one app. \
            The first line on stdout is `listening on HOST:PORT`; PORT=0 picks a free port. \
            Under systemd socket activation (LISTEN_FDS; config/toot-relay.socket) a listener \
            whose socket is passed, named webpush, api or metrics (FileDescriptorName=), \
            accepts on it instead of binding PORT and BIND (API_PORT and API_BIND, METRICS_PORT \
            and METRICS_BIND), so restarts queue connections instead of refusing them. \
            SIGHUP: reload APPS_FILE, every credential file and CRT_FILENAME/KEY_FILENAME (a \
            file that does not load leaves the running apps, or certificate, in place). \
            SIGTERM/SIGINT: stop accepting, finish in-flight requests within SHUTDOWN_GRACE, \
            exit 0 (a second signal skips the wait).
            """,
        subcommands: [CheckConfigCommand.self, ParseAppsFileCommand.self])

    @OptionGroup var options: RelayOptions

    func run() throws {
        do {
            let (passed, environment) = try takePassedSockets(ProcessInfo.processInfo.environment)
            let demo = options.demoCertificates.map { Demo(certificates: $0, emulator: DemoEmulatorProcess()) }
            try Daemon(environment: environment, flags: options.flagValues, demo: demo, passedSockets: passed).run()
        } catch {
            writeAll(2, "toot-relay: \(error.message)\n")
            throw ExitCode(1)
        }
    }
}

/// `toot-relay check-config`: loads everything the relay would, without
/// listening, and prints one line per app and environment.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Load the configuration, the apps file and every credential without listening; "
            + "print one line per app and environment (no secrets); exit 1 on any error.")

    @OptionGroup var options: RelayOptions

    func run() throws {
        do {
            let lines = try Daemon(environment: ProcessInfo.processInfo.environment, flags: options.flagValues,
                                   demo: nil).checkConfig()
            writeAll(1, lines.map { $0 + "\n" }.joined())
        } catch {
            writeAll(2, "toot-relay: \(error.message)\n")
            throw ExitCode(1)
        }
    }
}

/// `toot-relay parse-apps-file FILE`: the child of `probeAppsFile` (hidden).
struct ParseAppsFileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parse-apps-file", abstract: "Parse an apps file only (the relay's own check).",
        shouldDisplay: false)

    @Argument var file: String

    func run() throws {
        let status = parseAppsFileInChild(file, environment: ProcessInfo.processInfo.environment)
        if status != 0 { throw ExitCode(status) }
    }
}

/// The options of the relay and of `check-config`: one per variable.
struct RelayOptions: ParsableArguments {
    @Option(name: .customLong("port"), help: help("PORT")) var port: String?
    @Option(name: .customLong("bind"), help: help("BIND")) var bind: String?
    @Option(name: .customLong("public-url"), help: help("PUBLIC_URL")) var publicURL: String?
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
    @Option(name: .customLong("apps-file"), help: help("APPS_FILE")) var appsFile: String?
    @Option(name: .customLong("apns-production-host"), help: help("APNS_PRODUCTION_HOST")) var apnsProductionHost: String?
    @Option(name: .customLong("apns-development-host"), help: help("APNS_DEVELOPMENT_HOST")) var apnsDevelopmentHost: String?
    @Option(name: .customLong("apns-broadcast-production-host"), help: help("APNS_BROADCAST_PRODUCTION_HOST")) var apnsBroadcastProductionHost: String?
    @Option(name: .customLong("apns-broadcast-development-host"), help: help("APNS_BROADCAST_DEVELOPMENT_HOST")) var apnsBroadcastDevelopmentHost: String?
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
    @Option(name: .customLong("apns-idle-timeout"), help: help("APNS_IDLE_TIMEOUT")) var apnsIdleTimeout: String?
    @Option(name: .customLong("fcm-credentials-file"), help: help("FCM_CREDENTIALS_FILE")) var fcmCredentialsFile: String?
    @Option(name: .customLong("fcm-credentials-base64"), help: help("FCM_CREDENTIALS_BASE64")) var fcmCredentialsBase64: String?
    @Option(name: .customLong("fcm-host"), help: help("FCM_HOST")) var fcmHost: String?
    @Option(name: .customLong("fcm-timeout"), help: help("FCM_TIMEOUT")) var fcmTimeout: String?
    @Option(name: .customLong("fcm-max-connections"), help: help("FCM_MAX_CONNECTIONS")) var fcmMaxConnections: String?
    @Option(name: .customLong("shutdown-grace"), help: help("SHUTDOWN_GRACE")) var shutdownGrace: String?
    @Option(name: .customLong("threads"), help: help("THREADS")) var threads: String?
    @Option(name: .customLong("log-level"), help: help("LOG_LEVEL")) var logLevel: String?
    @Option(name: .customLong("metrics-port"), help: help("METRICS_PORT")) var metricsPort: String?
    @Option(name: .customLong("metrics-bind"), help: help("METRICS_BIND")) var metricsBind: String?
    @Option(name: .customLong("reuse-port"), help: help("REUSE_PORT")) var reusePort: String?
    // The provider API and feedback.
    @Option(name: .customLong("api-port"), help: help("API_PORT")) var apiPort: String?
    @Option(name: .customLong("api-bind"), help: help("API_BIND")) var apiBind: String?
    @Option(name: .customLong("api-keys"), help: help("API_KEYS")) var apiKeys: String?
    @Option(name: .customLong("api-max-body-bytes"), help: help("API_MAX_BODY_BYTES")) var apiMaxBodyBytes: String?
    @Option(name: .customLong("api-max-notifications"), help: help("API_MAX_NOTIFICATIONS")) var apiMaxNotifications: String?
    @Option(name: .customLong("api-max-tokens"), help: help("API_MAX_TOKENS")) var apiMaxTokens: String?
    @Option(name: .customLong("api-async"), help: help("API_ASYNC")) var apiAsync: String?
    @Option(name: .customLong("api-async-max-tries"), help: help("API_ASYNC_MAX_TRIES")) var apiAsyncMaxTries: String?
    @Option(name: .customLong("api-async-max-pending"), help: help("API_ASYNC_MAX_PENDING")) var apiAsyncMaxPending: String?
    @Option(name: .customLong("api-provision-dir"), help: help("API_PROVISION_DIR")) var apiProvisionDir: String?
    @Option(name: .customLong("feedback-max"), help: help("FEEDBACK_MAX")) var feedbackMax: String?
    @Option(name: .customLong("feedback-hook-url"), help: help("FEEDBACK_HOOK_URL")) var feedbackHookURL: String?
    @Option(name: .customLong("feedback-hook-headers"), help: help("FEEDBACK_HOOK_HEADERS")) var feedbackHookHeaders: String?
    @Option(name: .customLong("feedback-hook-queue"), help: help("FEEDBACK_HOOK_QUEUE")) var feedbackHookQueue: String?
    @Option(name: .customLong("feedback-hook-timeout"), help: help("FEEDBACK_HOOK_TIMEOUT")) var feedbackHookTimeout: String?
    @Option(name: .customLong("redis-url"), help: help("REDIS_URL")) var redisURL: String?
    @Option(name: .customLong("redis-claim-idle"), help: help("REDIS_CLAIM_IDLE")) var redisClaimIdle: String?
    @Option(name: .customLong("demo"), help: ArgumentHelp(
        "demo: run the apns-emulator built beside toot-relay on 127.0.0.1 as APNs and FCM with the throwaway certificates and keys of scripts/make-test-certs in DIR (the default app's credentials), and print each notification and FCM message it receives as a JSON line",
        valueName: "dir"))
    var demoCertificates: String?

    /// The flags given, by environment name.
    var flagValues: [String: String] {
        let pairs: [(String, String?)] = [
            ("PORT", port), ("BIND", bind), ("PUBLIC_URL", publicURL), ("CRT_FILENAME", crtFilename), ("KEY_FILENAME", keyFilename),
            ("P12_FILENAME", p12Filename), ("P12_BASE64", p12Base64), ("P12_PASSWORD", p12Password),
            ("TOKEN_AUTH_KEY_FILENAME", tokenAuthKeyFilename), ("TOKEN_KEY_ID", tokenKeyID),
            ("TOKEN_TEAM_ID", tokenTeamID), ("TOPIC", topic), ("CA_FILENAME", caFilename), ("APPS_FILE", appsFile),
            ("APNS_PRODUCTION_HOST", apnsProductionHost), ("APNS_DEVELOPMENT_HOST", apnsDevelopmentHost),
            ("APNS_BROADCAST_PRODUCTION_HOST", apnsBroadcastProductionHost),
            ("APNS_BROADCAST_DEVELOPMENT_HOST", apnsBroadcastDevelopmentHost),
            ("MAX_HEADER_BYTES", maxHeaderBytes), ("MAX_BODY_BYTES", maxBodyBytes), ("HEADER_TIMEOUT", headerTimeout),
            ("BODY_TIMEOUT", bodyTimeout), ("KEEPALIVE_TIMEOUT", keepaliveTimeout), ("MAX_CONNECTIONS", maxConnections),
            ("MAX_IN_FLIGHT", maxInFlight), ("APNS_CONNECT_TIMEOUT", apnsConnectTimeout), ("APNS_TIMEOUT", apnsTimeout),
            ("APNS_PING_INTERVAL", apnsPingInterval), ("APNS_PING_TIMEOUT", apnsPingTimeout),
            ("APNS_MAX_CONNECTIONS", apnsMaxConnections), ("APNS_IDLE_TIMEOUT", apnsIdleTimeout),
            ("FCM_CREDENTIALS_FILE", fcmCredentialsFile), ("FCM_CREDENTIALS_BASE64", fcmCredentialsBase64), ("FCM_HOST", fcmHost),
            ("FCM_TIMEOUT", fcmTimeout), ("FCM_MAX_CONNECTIONS", fcmMaxConnections),
            ("SHUTDOWN_GRACE", shutdownGrace), ("THREADS", threads),
            ("LOG_LEVEL", logLevel), ("REUSE_PORT", reusePort), ("METRICS_PORT", metricsPort),
            ("METRICS_BIND", metricsBind),
            ("API_PORT", apiPort), ("API_BIND", apiBind), ("API_KEYS", apiKeys), ("API_MAX_BODY_BYTES", apiMaxBodyBytes),
            ("API_MAX_NOTIFICATIONS", apiMaxNotifications), ("API_MAX_TOKENS", apiMaxTokens),
            ("API_ASYNC", apiAsync), ("API_ASYNC_MAX_TRIES", apiAsyncMaxTries), ("API_ASYNC_MAX_PENDING", apiAsyncMaxPending),
            ("API_PROVISION_DIR", apiProvisionDir), ("FEEDBACK_MAX", feedbackMax), ("FEEDBACK_HOOK_URL", feedbackHookURL),
            ("FEEDBACK_HOOK_HEADERS", feedbackHookHeaders), ("FEEDBACK_HOOK_QUEUE", feedbackHookQueue),
            ("FEEDBACK_HOOK_TIMEOUT", feedbackHookTimeout), ("REDIS_URL", redisURL), ("REDIS_CLAIM_IDLE", redisClaimIdle),
        ]
        var values: [String: String] = [:]
        for (name, value) in pairs { if let value { values[name] = value } }
        return values
    }
}
