import APNsCore
import FCMCore
import HTTPCore

/// Everything an operator can set, with its default, in one place.
///
/// The environment is the primary source (as with the Go `toot-relay` and
/// `mastodon/webpush-apn-relay`, whose variable names are kept); command-line
/// flags mirror the same names. `Configuration.variables` is the single table
/// of names, defaults and meanings that `--help`, the README and
/// `config/toot-relay.env.example` are written from. The HTTP/1 listener's
/// limits, timeouts and connection cap default to what the `HTTP1` module's
/// types say, read here.
public struct Configuration: Sendable, Equatable {
    // MARK: Listener
    /// TCP port of the Web Push listener; 0 picks a free one (tests, demo).
    public var port: UInt16 = 42069
    /// Address to bind; nil listens on all interfaces (IPv6 and IPv4).
    public var bindAddress: String? = nil
    /// One listening socket per loop thread with SO_REUSEPORT (the kernel
    /// spreads connections), or one shared socket handing them out.
    public var reusePort = ListenerOptions(port: 0).reusePort
    /// The origin senders address (`https://relay.example.com`), which a
    /// restricted endpoint's VAPID `aud` must name (RFC 8292 §2); nil: the
    /// scheme the request came by (the relay's own TLS, else
    /// `X-Forwarded-Proto`) and its `Host`.
    public var publicURL: String? = nil
    /// Serve HTTPS when this certificate file exists (as the Go relay does).
    public var tlsCertificateFile = "toot-relay.crt"
    public var tlsKeyFile = "toot-relay.key"

    // MARK: APNs credentials (precedence: token, then P12_BASE64, then P12_FILENAME)
    public var p12File = "toot-relay.p12"
    public var p12Base64: String? = nil
    public var p12Password = ""
    public var tokenKeyFile: String? = nil
    public var tokenKeyID: String? = nil
    public var tokenTeamID: String? = nil
    /// `apns-topic`; nil means the certificate's UID, else `defaultTopic`.
    public var topic: String? = nil
    public static let defaultTopic = "cx.c3.toot"
    /// PEM roots trusted for APNs; nil means the system store. No root is
    /// pinned by default: Apple changed its server CA in 2025 and relays that
    /// pinned the old one stopped delivering.
    public var caFile: String? = nil
    public var productionHost = APNsSettings().productionHost
    public var developmentHost = APNsSettings().developmentHost
    /// APNs' channel management hosts (Live Activity broadcast channels).
    public var broadcastProductionHost = APNsSettings().broadcastProductionHost
    public var broadcastDevelopmentHost = APNsSettings().broadcastDevelopmentHost

    // MARK: FCM credentials (the default app's Firebase service account)
    /// `FCM_CREDENTIALS_FILE`: the service account's JSON file.
    public var fcmCredentialsFile: String? = nil
    /// `FCM_CREDENTIALS_BASE64`: the same file, base64, in the environment
    /// (as `P12_BASE64`); never with `FCM_CREDENTIALS_FILE`.
    public var fcmCredentialsBase64: String? = nil
    /// Where FCM is, its connections per event loop and its answer timeout:
    /// `FCMSettings`' defaults.
    public var fcmHost = HostAndPort(host: FCMSettings().host, port: FCMSettings().port)
    public var fcmMaxConnections = FCMSettings().maxConnections
    public var fcmAnswerTimeout = FCMSettings().answerTimeout

    /// The apps file (TOML, ARCHITECTURE.md §7); nil: one app, described by the
    /// variables above.
    public var appsFile: String? = nil

    // MARK: Limits and timeouts (WIRE.md §5)
    public var maxHeaderBytes = HTTP1Limits().maxHeaderBytes
    public var maxBodyBytes = HTTP1Limits().maxBodyBytes
    public var headerTimeout = HTTP1ConnectionMachine.Timeouts().header
    public var bodyTimeout = HTTP1ConnectionMachine.Timeouts().body
    public var keepAliveTimeout = HTTP1ConnectionMachine.Timeouts().keepAlive
    public var maxConnections = ListenerOptions(port: 0).maxConnections
    public var maxInFlight = 20_000
    public var apnsConnectTimeout = APNsSettings().connectTimeout
    public var apnsAnswerTimeout = APNsSettings().answerTimeout
    public var apnsPingInterval = APNsSettings().pingInterval
    public var apnsPingTimeout = APNsSettings().pingTimeout
    /// Connections to each APNs environment, per credential and event loop.
    public var apnsMaxConnections = APNsSettings().maxConnectionsPerEnvironment
    /// A credential's connections to one environment close after this long
    /// without a notification; the next push opens them again.
    public var apnsIdleTimeout = APNsSettings().idleTimeout
    public var shutdownGrace: Duration = .seconds(10)

    // MARK: Metrics
    /// Port of the Prometheus metrics listener (0 picks a free one); nil: no
    /// metrics listener.
    public var metricsPort: UInt16? = nil
    /// Address of the metrics listener: loopback unless opened on purpose.
    public var metricsBindAddress = "127.0.0.1"

    // MARK: Provider API (WIRE.md §4)
    /// Port of the provider API listener (gorush's `/api/push`, pyapns'
    /// XML-RPC, `/3/device/…`, feedback; 0 picks a free one); nil: off.
    public var apiPort: UInt16? = nil
    /// Address of the API listener: loopback unless opened on purpose, and
    /// then only with a key (`apiExposureProblem`).
    public var apiBindAddress = "127.0.0.1"
    public var apiTLS = APITLSFiles()  // API_CRT_FILENAME, API_KEY_FILENAME, API_CLIENT_CA_FILENAME
    /// `API_KEYS`: keys for every app (named `API_KEYS[1]`… in logs); the
    /// apps file's `[[api-key]]` entries add keys for some apps.
    public var apiKeys: [APIKey] = []
    /// The largest request body the API reads (beyond: 400 with a JSON
    /// message, or an XML-RPC fault).
    public var apiMaxBodyBytes = 1 << 20
    /// Notifications in one `/api/push` request: gorush's default
    /// `max_notification`, 100.
    public var apiMaxNotifications = 100
    /// Device tokens in one request, over all its notifications.
    public var apiMaxTokens = 10_000
    /// A directory pyapns' `provision` may name certificate files in; nil:
    /// `provision` takes PEM text only.
    public var apiProvisionDirectory: String? = nil
    /// `/api/push` answers once its notifications are queued (gorush's
    /// default mode), not after APNs answered; a request's `"async"` chooses.
    public var apiAsync = false
    /// Tries in all of one asynchronous notification (the first included).
    public var apiAsyncMaxTries = 5
    /// Asynchronous notifications accepted and not done, per device token
    /// across the process (beyond: 503 with Retry-After).
    public var apiAsyncMaxPending = 1_000_000

    // MARK: Feedback
    /// Refused tokens kept per app until fetched (beyond: the oldest go).
    public var feedbackMax = 10_000
    /// Where each failed push is POSTed as JSON (gorush's
    /// `feedback_hook_url`); nil: no hook.
    public var feedbackHookURL: String? = nil
    /// Headers sent with each hook request (gorush's `feedback_header`).
    public var feedbackHookHeaders: [FeedbackHookHeader] = []
    /// Hook requests waiting to be sent (beyond: dropped and counted).
    public var feedbackHookQueue = 10_000
    /// How long one hook request may take (gorush's `feedback_timeout`).
    public var feedbackHookTimeout: Duration = .seconds(10)

    // MARK: Several instances
    /// Redis, where instances share feedback, hook posts, provisioned apps,
    /// provider tokens and the asynchronous queue: `redis://…` or
    /// `unix://…`, checked by the daemon (`RedisURL`); nil: each instance
    /// keeps its own, in memory.
    public var redisURL: String? = nil
    /// How long an asynchronous notification or hook post may sit unanswered
    /// with an instance that stopped renewing it before another instance
    /// takes it over.
    public var redisClaimIdle: Duration = .seconds(30)

    // MARK: Process
    /// Event loops (threads); nil means one per core.
    public var threads: Int? = nil
    public var logLevel: LogLevel = .info

    /// What is not set takes these values.
    public static let defaults = Configuration()

    // MARK: Fixed limits (WIRE.md §5), not settable
    /// Header fields in one request (beyond: 431).
    public static let maxHeaderCount = HTTP1Limits().maxHeaderCount
    /// The largest TTL kept, in seconds: 30 days, APNs' own storage limit.
    public static let maxTTL = 2_592_000

    public init() {}

    /// The topic to send as `apns-topic`, given the certificate's UID if any.
    public func effectiveTopic(certificateUID: String?) -> String {
        topic ?? certificateUID ?? Configuration.defaultTopic
    }

    public func host(for environment: APNsEnvironment) -> HostAndPort {
        environment == .production ? productionHost : developmentHost
    }
}

public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public var variable: String
    public var message: String
    public var description: String { "\(variable): \(message)" }
}

/// One row of the configuration table: the environment name, the flag that
/// mirrors it, its default as shown to people, and what it means.
public struct ConfigurationVariable: Sendable {
    public var name: String
    public var defaultText: String
    public var help: String

    /// `PORT` → `--port`, `P12_FILENAME` → `--p12-filename`.
    public var flag: String { "--" + name.lowercased().replacingUnderscores() }
}

/// A duration as the number of seconds a variable takes: `10`, `1.5`.
private func secondsText(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    if attoseconds == 0 { return String(seconds) }
    return String(Double(seconds) + Double(attoseconds) / 1e18)
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        String(map { $0 == "_" ? "-" : $0 })
    }
}

extension Configuration {
    /// Every variable, in the order `--help` and the README list them. The
    /// defaults shown are read from `defaults` (no second copy to drift).
    public static let variables: [ConfigurationVariable] = [
        .init(name: "PORT", defaultText: String(defaults.port), help: "listen port of the Web Push listener (0: any free port)"),
        .init(name: "BIND", defaultText: "all interfaces", help: "address to listen on, e.g. 127.0.0.1 behind nginx"),
        .init(name: "PUBLIC_URL", defaultText: "unset (scheme and Host of each request)", help: "the origin senders address, e.g. https://relay.example.com: the aud a restricted endpoint's VAPID token must name"),
        .init(name: "CRT_FILENAME", defaultText: defaults.tlsCertificateFile, help: "serve HTTPS with this certificate when the file exists; SIGHUP reloads it"),
        .init(name: "KEY_FILENAME", defaultText: defaults.tlsKeyFile, help: "private key for CRT_FILENAME"),
        .init(name: "P12_FILENAME", defaultText: defaults.p12File, help: "APNs client certificate and key (PKCS#12)"),
        .init(name: "P12_BASE64", defaultText: "unset", help: "the same PKCS#12, base64, in the environment (wins over P12_FILENAME)"),
        .init(name: "P12_PASSWORD", defaultText: "empty", help: "password of the PKCS#12"),
        .init(name: "TOKEN_AUTH_KEY_FILENAME", defaultText: "unset", help: "APNs auth key (.p8); token auth wins over certificates when set"),
        .init(name: "TOKEN_KEY_ID", defaultText: "unset", help: "key id of the .p8 key (JWT kid)"),
        .init(name: "TOKEN_TEAM_ID", defaultText: "unset", help: "Apple developer team id (JWT iss)"),
        .init(name: "TOPIC", defaultText: "certificate UID, else \(defaultTopic)", help: "apns-topic: the app's bundle id"),
        .init(name: "FCM_CREDENTIALS_FILE", defaultText: "unset (no FCM)", help: "the default app's Firebase service-account JSON file: its /relay-to/fcm/<token> URLs deliver through FCM"),
        .init(name: "FCM_CREDENTIALS_BASE64", defaultText: "unset", help: "the same JSON, base64, in the environment (not with FCM_CREDENTIALS_FILE)"),
        .init(name: "FCM_HOST", defaultText: defaults.fcmHost.description, help: "host[:port] of FCM's HTTP v1 API"),
        .init(name: "APPS_FILE", defaultText: "unset (one app)", help: "TOML file of several apps (config/apps.example.toml); SIGHUP reloads it"),
        .init(name: "CA_FILENAME", defaultText: "system roots", help: "PEM roots trusted for the APNs servers"),
        .init(name: "APNS_PRODUCTION_HOST", defaultText: defaults.productionHost.description, help: "host[:port] of APNs production"),
        .init(name: "APNS_DEVELOPMENT_HOST", defaultText: defaults.developmentHost.description, help: "host[:port] of APNs development (sandbox)"),
        .init(name: "APNS_BROADCAST_PRODUCTION_HOST", defaultText: defaults.broadcastProductionHost.description, help: "host[:port] of APNs' channel management (Live Activity broadcast channels), production"),
        .init(name: "APNS_BROADCAST_DEVELOPMENT_HOST", defaultText: defaults.broadcastDevelopmentHost.description, help: "host[:port] of APNs' channel management, development (sandbox)"),
        .init(name: "MAX_HEADER_BYTES", defaultText: String(defaults.maxHeaderBytes), help: "largest request header block (431 beyond)"),
        .init(name: "MAX_BODY_BYTES", defaultText: String(defaults.maxBodyBytes), help: "largest request body read (413 beyond)"),
        .init(name: "HEADER_TIMEOUT", defaultText: secondsText(defaults.headerTimeout), help: "seconds to receive a request head (beyond: closed without an answer; the API port answers 408)"),
        .init(name: "BODY_TIMEOUT", defaultText: secondsText(defaults.bodyTimeout), help: "seconds to receive a request body (beyond: as HEADER_TIMEOUT)"),
        .init(name: "KEEPALIVE_TIMEOUT", defaultText: secondsText(defaults.keepAliveTimeout), help: "seconds an idle sender connection is kept open"),
        .init(name: "MAX_CONNECTIONS", defaultText: String(defaults.maxConnections), help: "open sender connections (beyond: accepted and closed)"),
        .init(name: "MAX_IN_FLIGHT", defaultText: String(defaults.maxInFlight), help: "notifications waiting for APNs (beyond: 503)"),
        .init(name: "APNS_CONNECT_TIMEOUT", defaultText: secondsText(defaults.apnsConnectTimeout), help: "seconds for connect and TLS handshake to APNs"),
        .init(name: "APNS_TIMEOUT", defaultText: secondsText(defaults.apnsAnswerTimeout), help: "seconds to wait for APNs to answer a notification (504 beyond)"),
        .init(name: "APNS_PING_INTERVAL", defaultText: secondsText(defaults.apnsPingInterval), help: "seconds of idle before an APNs connection is PINGed"),
        .init(name: "APNS_PING_TIMEOUT", defaultText: secondsText(defaults.apnsPingTimeout), help: "seconds to wait for a PING answer before reconnecting"),
        .init(name: "APNS_MAX_CONNECTIONS", defaultText: String(defaults.apnsMaxConnections), help: "connections to each APNs environment per thread (opened as streams or flow-control window fill)"),
        .init(name: "FCM_TIMEOUT", defaultText: secondsText(defaults.fcmAnswerTimeout), help: "seconds to wait for FCM to answer a message (504 beyond; APNS_TIMEOUT's default)"),
        .init(name: "FCM_MAX_CONNECTIONS", defaultText: String(defaults.fcmMaxConnections), help: "connections to FCM per service account and thread (APNS_MAX_CONNECTIONS' default)"),
        .init(name: "APNS_IDLE_TIMEOUT", defaultText: secondsText(defaults.apnsIdleTimeout), help: "seconds without a notification after which a credential's APNs connections close"),
        .init(name: "SHUTDOWN_GRACE", defaultText: secondsText(defaults.shutdownGrace), help: "seconds to finish in-flight requests on SIGTERM"),
        .init(name: "THREADS", defaultText: "one per core", help: "event loop threads"),
        .init(name: "LOG_LEVEL", defaultText: defaults.logLevel.name, help: "debug, info, warning or error"),
        .init(name: "METRICS_PORT", defaultText: "unset (off)", help: "serve Prometheus metrics on GET /metrics at this port"),
        .init(name: "METRICS_BIND", defaultText: defaults.metricsBindAddress, help: "address of the metrics listener"),
        .init(name: "REUSE_PORT", defaultText: defaults.reusePort ? "1" : "0", help: "one listening socket per thread with SO_REUSEPORT (1), or one shared socket (0)"),
        .init(name: "API_PORT", defaultText: "unset (off)", help: "serve the provider API (gorush /api/push, pyapns XML-RPC, /3/device/<token>, feedback) at this port"),
        .init(name: "API_BIND", defaultText: defaults.apiBindAddress, help: "address of the API listener; anything but loopback needs an API key"),
    ] + APITLSFiles.variables + [
        .init(name: "API_KEYS", defaultText: "unset (none)", help: "comma-separated API keys for every app (16 to 512 of letters, digits, -._~+/); [[api-key]] in APPS_FILE adds keys for some apps"),
        .init(name: "API_MAX_BODY_BYTES", defaultText: String(defaults.apiMaxBodyBytes), help: "largest API request body read"),
        .init(name: "API_MAX_NOTIFICATIONS", defaultText: String(defaults.apiMaxNotifications), help: "notifications in one /api/push request (gorush's max_notification)"),
        .init(name: "API_MAX_TOKENS", defaultText: String(defaults.apiMaxTokens), help: "device tokens in one API request, over all its notifications"),
        .init(name: "API_ASYNC", defaultText: defaults.apiAsync ? "1" : "0", help: "answer /api/push once its notifications are queued, as gorush does by default (1), or after APNs answered (0); a request's \"async\": true|false chooses"),
        .init(name: "API_ASYNC_MAX_TRIES", defaultText: String(defaults.apiAsyncMaxTries), help: "tries of one asynchronous notification after APNs 429, 5xx or no answer, the first included"),
        .init(name: "API_ASYNC_MAX_PENDING", defaultText: String(defaults.apiAsyncMaxPending), help: "asynchronous notifications queued and not done, per device token (beyond: 503 with Retry-After)"),
        .init(name: "API_PROVISION_DIR", defaultText: "unset (PEM text only)", help: "absolute directory pyapns' provision may name certificate files in"),
        .init(name: "FEEDBACK_MAX", defaultText: String(defaults.feedbackMax), help: "refused tokens kept per app until fetched (beyond: the oldest dropped)"),
        .init(name: "FEEDBACK_HOOK_URL", defaultText: "unset (off)", help: "http(s) URL each failed push is POSTed to as JSON (gorush's feedback_hook_url)"),
        .init(name: "FEEDBACK_HOOK_HEADERS", defaultText: "none", help: "comma-separated Name: value headers for the hook (gorush's feedback_header; needs FEEDBACK_HOOK_URL)"),
        .init(name: "FEEDBACK_HOOK_QUEUE", defaultText: String(defaults.feedbackHookQueue), help: "hook requests waiting to be sent (beyond: dropped and counted; needs FEEDBACK_HOOK_URL)"),
        .init(name: "FEEDBACK_HOOK_TIMEOUT", defaultText: secondsText(defaults.feedbackHookTimeout), help: "seconds one hook request may take (gorush's feedback_timeout; needs FEEDBACK_HOOK_URL)"),
        .init(name: "REDIS_URL", defaultText: "unset (state per instance)", help: "redis://[[user]:password@]host[:port][/db] or unix:///path?db=N: feedback, hook posts, provisioned apps, provider tokens and the asynchronous queue shared by every instance"),
        .init(name: "REDIS_CLAIM_IDLE", defaultText: secondsText(defaults.redisClaimIdle), help: "seconds after which an instance takes over the asynchronous notifications and hook posts another instance stopped renewing (needs REDIS_URL)"),
    ]

    /// Reads the configuration from environment-style variables. Empty values
    /// count as unset, as in the Go relay (`os.Getenv` returns "" for both).
    public init(environment: [String: String]) throws(ConfigurationError) {
        self.init()
        try apply(environment)
    }

    /// Overrides the fields named in `values` (environment names as keys).
    public mutating func apply(_ values: [String: String]) throws(ConfigurationError) {
        func value(_ name: String) -> String? {
            guard let value = values[name], !value.isEmpty else { return nil }
            return value
        }
        if let text = value("PORT") {
            guard let port = HostAndPort.port(parsing: Substring(text), allowingZero: true) else {
                throw ConfigurationError(variable: "PORT", message: "'\(text)' is not a port number (0-65535; 0 picks a free port)")
            }
            self.port = port
        }
        if let text = value("REUSE_PORT") {
            switch text.lowercased() {
            case "1", "true", "yes", "on": reusePort = true
            case "0", "false", "no", "off": reusePort = false
            default: throw ConfigurationError(variable: "REUSE_PORT", message: "'\(text)' is not 1 or 0")
            }
        }
        if let text = value("API_ASYNC") {
            switch text.lowercased() {
            case "1", "true", "yes", "on": apiAsync = true
            case "0", "false", "no", "off": apiAsync = false
            default: throw ConfigurationError(variable: "API_ASYNC", message: "'\(text)' is not 1 or 0")
            }
        }
        if let text = value("BIND") { bindAddress = text }
        if let text = value("PUBLIC_URL") {
            guard let origin = publicOrigin(text) else {
                throw ConfigurationError(variable: "PUBLIC_URL",
                                         message: "'\(text)' is not an origin like https://relay.example.com (scheme and host, no path)")
            }
            publicURL = origin
        }
        if let text = value("CRT_FILENAME") { tlsCertificateFile = text }
        if let text = value("KEY_FILENAME") { tlsKeyFile = text }
        if let text = value("P12_FILENAME") { p12File = text }
        if let text = value("P12_BASE64") { p12Base64 = text }
        // The password is taken as given, even empty (an empty password is a
        // real PKCS#12 password distinct from none only to the exporter).
        if let text = values["P12_PASSWORD"] { p12Password = text }
        if let text = value("TOKEN_AUTH_KEY_FILENAME") { tokenKeyFile = text }
        if let text = value("TOKEN_KEY_ID") { tokenKeyID = text }
        if let text = value("TOKEN_TEAM_ID") { tokenTeamID = text }
        if let text = value("TOPIC") { topic = text }
        if let text = value("CA_FILENAME") { caFile = text }
        if let text = value("APPS_FILE") { appsFile = text }
        if let text = value("FCM_CREDENTIALS_FILE") { fcmCredentialsFile = text }
        if let text = value("FCM_CREDENTIALS_BASE64") { fcmCredentialsBase64 = text }
        if fcmCredentialsFile != nil && fcmCredentialsBase64 != nil {
            throw ConfigurationError(variable: "FCM_CREDENTIALS_BASE64",
                                     message: "FCM_CREDENTIALS_FILE is set too; give one of the two")
        }
        if let text = value("REDIS_URL") { redisURL = text }
        for (name, keyPath) in [("APNS_PRODUCTION_HOST", \Configuration.productionHost),
                                ("APNS_DEVELOPMENT_HOST", \Configuration.developmentHost),
                                ("APNS_BROADCAST_PRODUCTION_HOST", \Configuration.broadcastProductionHost),
                                ("APNS_BROADCAST_DEVELOPMENT_HOST", \Configuration.broadcastDevelopmentHost),
                                ("FCM_HOST", \Configuration.fcmHost)] {
            if let text = value(name) {
                guard let parsed = HostAndPort(parsing: text) else {
                    throw ConfigurationError(variable: name, message: "'\(text)' is not host[:port]")
                }
                self[keyPath: keyPath] = parsed
            }
        }
        let counts: [(String, WritableKeyPath<Configuration, Int>, ClosedRange<Int>)] = [
            ("MAX_HEADER_BYTES", \.maxHeaderBytes, 1024...1_048_576),
            ("MAX_BODY_BYTES", \.maxBodyBytes, 1024...1_048_576),
            ("MAX_CONNECTIONS", \.maxConnections, 1...10_000_000),
            ("MAX_IN_FLIGHT", \.maxInFlight, 1...10_000_000),
            ("APNS_MAX_CONNECTIONS", \.apnsMaxConnections, 1...1000),
            ("FCM_MAX_CONNECTIONS", \.fcmMaxConnections, 1...1000),
            ("API_MAX_BODY_BYTES", \.apiMaxBodyBytes, 1024...67_108_864),
            ("API_MAX_NOTIFICATIONS", \.apiMaxNotifications, 1...100_000),
            ("API_MAX_TOKENS", \.apiMaxTokens, 1...1_000_000),
            ("API_ASYNC_MAX_TRIES", \.apiAsyncMaxTries, 1...100),
            ("API_ASYNC_MAX_PENDING", \.apiAsyncMaxPending, 1...100_000_000),
            ("FEEDBACK_MAX", \.feedbackMax, 1...1_000_000),
            ("FEEDBACK_HOOK_QUEUE", \.feedbackHookQueue, 1...1_000_000),
        ]
        for (name, keyPath, range) in counts {
            if let text = value(name) {
                guard let number = Int(text), range.contains(number) else {
                    throw ConfigurationError(variable: name, message: "'\(text)' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
                }
                self[keyPath: keyPath] = number
            }
        }
        let durations: [(String, WritableKeyPath<Configuration, Duration>)] = [
            ("HEADER_TIMEOUT", \.headerTimeout),
            ("BODY_TIMEOUT", \.bodyTimeout),
            ("KEEPALIVE_TIMEOUT", \.keepAliveTimeout),
            ("APNS_CONNECT_TIMEOUT", \.apnsConnectTimeout),
            ("APNS_TIMEOUT", \.apnsAnswerTimeout),
            ("FCM_TIMEOUT", \.fcmAnswerTimeout),
            ("APNS_PING_INTERVAL", \.apnsPingInterval),
            ("APNS_PING_TIMEOUT", \.apnsPingTimeout),
            ("APNS_IDLE_TIMEOUT", \.apnsIdleTimeout),
            ("SHUTDOWN_GRACE", \.shutdownGrace),
            ("FEEDBACK_HOOK_TIMEOUT", \.feedbackHookTimeout),
            ("REDIS_CLAIM_IDLE", \.redisClaimIdle),
        ]
        for (name, keyPath) in durations {
            if let text = value(name) {
                guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
                    throw ConfigurationError(variable: name, message: "'\(text)' is not a number of seconds in (0, 86400]")
                }
                self[keyPath: keyPath] = .milliseconds(Int64((seconds * 1000).rounded()))
            }
        }
        if let text = value("THREADS") {
            guard let number = Int(text), (1...256).contains(number) else {
                throw ConfigurationError(variable: "THREADS", message: "'\(text)' is not a whole number in 1...256")
            }
            threads = number
        }
        if let text = value("METRICS_PORT") {
            guard let port = HostAndPort.port(parsing: Substring(text), allowingZero: true) else {
                throw ConfigurationError(variable: "METRICS_PORT", message: "'\(text)' is not a port number (0-65535; 0 picks a free port)")
            }
            metricsPort = port
        }
        if let text = value("METRICS_BIND") { metricsBindAddress = text }
        if let text = value("API_PORT") {
            guard let port = HostAndPort.port(parsing: Substring(text), allowingZero: true) else {
                throw ConfigurationError(variable: "API_PORT", message: "'\(text)' is not a port number (0-65535; 0 picks a free port)")
            }
            apiPort = port
        }
        // The API is never reachable through the Web Push port.
        // One port number for both would be a bind error at best; with
        // SO_REUSEPORT (REUSE_PORT=1) the kernel would share the port's
        // connections between the two listeners. The same for metrics.
        if let apiPort, apiPort != 0 {
            for (name, other) in [("PORT", Optional(port)), ("METRICS_PORT", metricsPort)] where other == apiPort {
                throw ConfigurationError(variable: "API_PORT", message: "\(apiPort) is \(name) too; the API needs a port of its own")
            }
        }
        if let text = value("API_BIND") { apiBindAddress = text }
        try apiTLS.apply(value)
        if let text = value("API_KEYS") { apiKeys = try parseAPIKeys(text) }
        if let text = value("API_PROVISION_DIR") {
            // Absolute, so that "inside it" does not depend on the working
            // directory a path given to provision is resolved against.
            guard text.hasPrefix("/") else {
                throw ConfigurationError(variable: "API_PROVISION_DIR", message: "'\(text)' is not an absolute path")
            }
            apiProvisionDirectory = text
        }
        if let text = value("FEEDBACK_HOOK_URL") {
            if let problem = hookURLProblem(text) {
                throw ConfigurationError(variable: "FEEDBACK_HOOK_URL", message: problem)
            }
            feedbackHookURL = text
        }
        if let text = value("FEEDBACK_HOOK_HEADERS") { feedbackHookHeaders = try parseHookHeaders(text) }
        if let text = value("LOG_LEVEL") {
            guard let level = LogLevel(name: text) else {
                throw ConfigurationError(variable: "LOG_LEVEL", message: "'\(text)' is not one of debug, info, warning, error")
            }
            logLevel = level
        }
        // Token auth needs all three parts; a partial set is a mistake worth
        // refusing at startup rather than silently falling back to a p12.
        let tokenParts = [tokenKeyFile, tokenKeyID, tokenTeamID].filter { $0 != nil }.count
        if tokenParts != 0 && tokenParts != 3 {
            throw ConfigurationError(
                variable: "TOKEN_AUTH_KEY_FILENAME",
                message: "token auth needs TOKEN_AUTH_KEY_FILENAME, TOKEN_KEY_ID and TOKEN_TEAM_ID together")
        }
        // The hook's settings without its URL are refused too: a misspelt
        // FEEDBACK_HOOK_URL would otherwise switch the hook off in silence
        // while its headers, queue and timeout look configured.
        if feedbackHookURL == nil {
            for name in Self.hookSettings where value(name) != nil {
                throw ConfigurationError(
                    variable: name,
                    message: "is set but FEEDBACK_HOOK_URL is not; without its URL there is no hook (set FEEDBACK_HOOK_URL, or unset \(name))")
            }
        }
        // The same for Redis: a misspelt REDIS_URL must not leave each
        // instance on its own state while the fleet's settings look set.
        if redisURL == nil, value("REDIS_CLAIM_IDLE") != nil {
            throw ConfigurationError(
                variable: "REDIS_CLAIM_IDLE",
                message: "is set but REDIS_URL is not; without Redis nothing is claimed (set REDIS_URL, or unset REDIS_CLAIM_IDLE)")
        }
    }

    /// The variables that only mean something with `FEEDBACK_HOOK_URL`.
    static let hookSettings = ["FEEDBACK_HOOK_HEADERS", "FEEDBACK_HOOK_QUEUE", "FEEDBACK_HOOK_TIMEOUT"]

    /// Which credential the configuration selects, in webpush-apn-relay's
    /// order of precedence.
    public var credentialSpec: CredentialSpec {
        if let file = tokenKeyFile, let keyID = tokenKeyID, let teamID = tokenTeamID {
            return .p8File(path: file, keyID: keyID, teamID: teamID)
        }
        if let base64 = p12Base64 { return .p12Base64(base64, password: p12Password) }
        return .p12File(path: p12File, password: p12Password)
    }

    /// Whether the variables describe an app of their own: with
    /// an apps file, that app is then the default app. They do when they
    /// name a credential (token auth, `P12_BASE64`, a `P12_FILENAME` other
    /// than the default) or the default `toot-relay.p12` exists.
    public func describesApp(fileExists: (String) -> Bool) -> Bool {
        tokenKeyFile != nil || p12Base64 != nil || p12File != Configuration.defaults.p12File || fileExists(p12File)
    }
}

/// `PUBLIC_URL` as an origin (`vapidOrigin(of:)`, the one comparison of
/// origins): `http` or `https`, an authority, and nothing after it but an
/// optional `/`. Nil for anything else.
func publicOrigin(_ text: String) -> String? {
    let lowered = text.lowercased()
    guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), let origin = vapidOrigin(of: text)
    else { return nil }
    let authorityAndRest = text.dropFirst(lowered.hasPrefix("https://") ? 8 : 7)
    let rest = authorityAndRest.drop(while: { $0 != "/" && $0 != "?" && $0 != "#" })
    return rest.isEmpty || rest == "/" ? origin : nil
}
