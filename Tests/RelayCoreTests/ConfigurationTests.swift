import APNsCore
@testable import RelayCore
import Testing

@Suite("Configuration from the environment")
struct ConfigurationTests {
    @Test("an empty environment gives the documented defaults")
    func defaults() throws {
        let configuration = try Configuration(environment: [:])
        #expect(configuration.port == 42069)
        #expect(configuration.bindAddress == nil)
        #expect(configuration.p12File == "toot-relay.p12")
        #expect(configuration.p12Password == "")
        #expect(configuration.tlsCertificateFile == "toot-relay.crt")
        #expect(configuration.tlsKeyFile == "toot-relay.key")
        #expect(configuration.productionHost == HostAndPort(host: "api.push.apple.com", port: 443))
        #expect(configuration.developmentHost == HostAndPort(host: "api.sandbox.push.apple.com", port: 443))
        #expect(configuration.maxHeaderBytes == 16384)
        #expect(configuration.maxBodyBytes == 8192)
        #expect(configuration.apnsAnswerTimeout == .seconds(8))
        #expect(configuration.keepAliveTimeout == .seconds(75))
        #expect(configuration.maxConnections == 16384)
        #expect(configuration.maxInFlight == 20000)
        #expect(configuration.credentialSpec == .p12File(path: "toot-relay.p12", password: ""))
        #expect(configuration.logLevel == .info)
        #expect(configuration.metricsPort == nil)
        #expect(configuration.metricsBindAddress == "127.0.0.1")
    }

    @Test("every documented variable is applied", arguments: [
        ("PORT", "8080"), ("BIND", "127.0.0.1"), ("CRT_FILENAME", "a.crt"), ("KEY_FILENAME", "a.key"),
        ("P12_FILENAME", "a.p12"), ("P12_PASSWORD", "pw"), ("TOPIC", "org.example.app"),
        ("CA_FILENAME", "roots.pem"), ("APNS_PRODUCTION_HOST", "127.0.0.1:8443"),
        ("APNS_DEVELOPMENT_HOST", "[::1]:9443"), ("APNS_BROADCAST_PRODUCTION_HOST", "127.0.0.1:8444"),
        ("APNS_BROADCAST_DEVELOPMENT_HOST", "[::1]:9444"), ("MAX_HEADER_BYTES", "4096"), ("MAX_BODY_BYTES", "4096"),
        ("HEADER_TIMEOUT", "2.5"), ("BODY_TIMEOUT", "3"), ("KEEPALIVE_TIMEOUT", "30"),
        ("MAX_CONNECTIONS", "100"), ("MAX_IN_FLIGHT", "50"), ("APNS_CONNECT_TIMEOUT", "1"),
        ("APNS_TIMEOUT", "0.5"), ("APNS_PING_INTERVAL", "20"), ("APNS_PING_TIMEOUT", "2"),
        ("APNS_MAX_CONNECTIONS", "2"), ("SHUTDOWN_GRACE", "4"), ("THREADS", "3"), ("LOG_LEVEL", "debug"),
        ("METRICS_PORT", "9100"), ("METRICS_BIND", "::1"), ("REUSE_PORT", "0"),
        ("API_PORT", "8088"), ("API_BIND", "::1"), ("API_KEYS", "0123456789abcdef"), ("API_MAX_BODY_BYTES", "2048"),
        ("API_MAX_NOTIFICATIONS", "10"), ("API_MAX_TOKENS", "20"), ("API_PROVISION_DIR", "/srv/certs"),
        ("FEEDBACK_MAX", "5"), ("FEEDBACK_HOOK_URL", "http://127.0.0.1:9"), ("FEEDBACK_HOOK_HEADERS", "X-A: b"),
        ("FEEDBACK_HOOK_QUEUE", "7"), ("FEEDBACK_HOOK_TIMEOUT", "3"),
        ("FCM_CREDENTIALS_FILE", "sa.json"), ("FCM_CREDENTIALS_BASE64", "e30="), ("FCM_HOST", "127.0.0.1:9443"),
        ("FCM_TIMEOUT", "2"), ("FCM_MAX_CONNECTIONS", "2"),
    ])
    func appliesVariable(name: String, value: String) throws {
        // The hook's settings need its URL (refused without): both sides have it.
        let base = Configuration.hookSettings.contains(name) ? ["FEEDBACK_HOOK_URL": "http://127.0.0.1:9"] : [:]
        let defaults = try Configuration(environment: base)
        let configured = try Configuration(environment: base.merging([name: value]) { $1 })
        #expect(configured != defaults, "\(name)=\(value) changed nothing")
    }

    @Test("values land in the right fields")
    func values() throws {
        let configuration = try Configuration(environment: [
            "PORT": "8080", "APNS_DEVELOPMENT_HOST": "[::1]:9443", "APNS_TIMEOUT": "0.5",
            "THREADS": "3", "LOG_LEVEL": "WARN", "APNS_PRODUCTION_HOST": "localhost",
        ])
        #expect(configuration.port == 8080)
        #expect(configuration.developmentHost == HostAndPort(host: "::1", port: 9443))
        #expect(configuration.productionHost == HostAndPort(host: "localhost", port: 443))
        #expect(configuration.apnsAnswerTimeout == .milliseconds(500))
        #expect(configuration.threads == 3)
        #expect(configuration.logLevel == .warning)
    }

    @Test("metrics stay off unless METRICS_PORT is set, and listen on loopback unless METRICS_BIND says otherwise")
    func metricsListener() throws {
        let onLoopback = try Configuration(environment: ["METRICS_PORT": "9100"])
        #expect(onLoopback.metricsPort == 9100)
        #expect(onLoopback.metricsBindAddress == "127.0.0.1")
        let everywhere = try Configuration(environment: ["METRICS_PORT": "9100", "METRICS_BIND": "0.0.0.0"])
        #expect(everywhere.metricsBindAddress == "0.0.0.0")
        #expect(try Configuration(environment: ["METRICS_PORT": ""]).metricsPort == nil)
    }

    @Test("API_CRT_FILENAME and API_KEY_FILENAME turn TLS on together; API_CLIENT_CA_FILENAME needs them")
    func apiTLS() throws {
        #expect(try Configuration(environment: [:]).apiTLS.serverFiles == nil)
        let on = try Configuration(environment: ["API_CRT_FILENAME": "/etc/api.crt", "API_KEY_FILENAME": "/etc/api.key",
                                                 "API_CLIENT_CA_FILENAME": "/etc/clients.pem"])
        #expect(on.apiTLS.serverFiles?.certificate == "/etc/api.crt")
        #expect(on.apiTLS.serverFiles?.key == "/etc/api.key")
        #expect(on.apiTLS.clientCAFile == "/etc/clients.pem")
        for (environment, variable) in [(["API_CRT_FILENAME": "/etc/api.crt"], "API_KEY_FILENAME"),
                                        (["API_KEY_FILENAME": "/etc/api.key"], "API_CRT_FILENAME"),
                                        (["API_CLIENT_CA_FILENAME": "/etc/clients.pem"], "API_CLIENT_CA_FILENAME")] {
            #expect(throws: ConfigurationError.self) { try Configuration(environment: environment) }
            do {
                _ = try Configuration(environment: environment)
            } catch {
                #expect(error.variable == variable)
            }
        }
    }

    @Test("REDIS_URL is kept as given for the daemon to parse; REDIS_CLAIM_IDLE needs it")
    func redisSettings() throws {
        let unset = try Configuration(environment: [:])
        #expect(unset.redisURL == nil)
        #expect(unset.redisClaimIdle == .seconds(30))
        let set = try Configuration(environment: ["REDIS_URL": "redis://:pw@10.0.0.5:6380/2", "REDIS_CLAIM_IDLE": "7.5"])
        #expect(set.redisURL == "redis://:pw@10.0.0.5:6380/2")
        #expect(set.redisClaimIdle == .milliseconds(7500))
        #expect(throws: ConfigurationError.self) { try Configuration(environment: ["REDIS_CLAIM_IDLE": "30"]) }
        #expect(throws: ConfigurationError.self) {
            try Configuration(environment: ["REDIS_URL": "redis://127.0.0.1", "REDIS_CLAIM_IDLE": "0"])
        }
    }

    @Test("every variable in the table has a flag named after it")
    func variableTable() {
        let names = Configuration.variables.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(Configuration.variables.first { $0.name == "P12_FILENAME" }?.flag == "--p12-filename")
        #expect(Configuration.variables.first { $0.name == "PORT" }?.flag == "--port")
    }

    @Test("the defaults the table shows are read from Configuration.defaults and read as before")
    func variableDefaults() {
        let shown = Dictionary(uniqueKeysWithValues: Configuration.variables.map { ($0.name, $0.defaultText) })
        #expect(shown == [
            "PORT": "42069", "BIND": "all interfaces", "CRT_FILENAME": "toot-relay.crt",
            "KEY_FILENAME": "toot-relay.key", "P12_FILENAME": "toot-relay.p12", "P12_BASE64": "unset",
            "P12_PASSWORD": "empty", "TOKEN_AUTH_KEY_FILENAME": "unset", "TOKEN_KEY_ID": "unset",
            "TOKEN_TEAM_ID": "unset", "TOPIC": "certificate UID, else cx.c3.toot", "CA_FILENAME": "system roots",
            "APPS_FILE": "unset (one app)", "APNS_IDLE_TIMEOUT": "3600",
            "FCM_CREDENTIALS_FILE": "unset (no FCM)", "FCM_CREDENTIALS_BASE64": "unset",
            "FCM_HOST": "fcm.googleapis.com:443", "FCM_TIMEOUT": "8", "FCM_MAX_CONNECTIONS": "4",
            "PUBLIC_URL": "unset (scheme and Host of each request)",
            "APNS_PRODUCTION_HOST": "api.push.apple.com:443",
            "APNS_DEVELOPMENT_HOST": "api.sandbox.push.apple.com:443",
            "APNS_BROADCAST_PRODUCTION_HOST": "api-manage-broadcast.push.apple.com:2196",
            "APNS_BROADCAST_DEVELOPMENT_HOST": "api-manage-broadcast.sandbox.push.apple.com:2195",
            "MAX_HEADER_BYTES": "16384", "MAX_BODY_BYTES": "8192", "HEADER_TIMEOUT": "10", "BODY_TIMEOUT": "10", "KEEPALIVE_TIMEOUT": "75",
            "MAX_CONNECTIONS": "16384", "MAX_IN_FLIGHT": "20000", "APNS_CONNECT_TIMEOUT": "5", "APNS_TIMEOUT": "8",
            "APNS_PING_INTERVAL": "60", "APNS_PING_TIMEOUT": "5", "APNS_MAX_CONNECTIONS": "4", "SHUTDOWN_GRACE": "10",
            "THREADS": "one per core", "LOG_LEVEL": "info", "METRICS_PORT": "unset (off)",
            "METRICS_BIND": "127.0.0.1", "REUSE_PORT": "1",
            "API_PORT": "unset (off)", "API_BIND": "127.0.0.1", "API_KEYS": "unset (none)",
            "API_CRT_FILENAME": "unset (plain HTTP)", "API_KEY_FILENAME": "unset",
            "API_CLIENT_CA_FILENAME": "unset (no client certificates)",
            "API_MAX_BODY_BYTES": "1048576", "API_MAX_NOTIFICATIONS": "100", "API_MAX_TOKENS": "10000",
            "API_ASYNC": "0", "API_ASYNC_MAX_TRIES": "5", "API_ASYNC_MAX_PENDING": "1000000",
            "API_PROVISION_DIR": "unset (PEM text only)", "FEEDBACK_MAX": "10000", "FEEDBACK_HOOK_URL": "unset (off)",
            "FEEDBACK_HOOK_HEADERS": "none", "FEEDBACK_HOOK_QUEUE": "10000", "FEEDBACK_HOOK_TIMEOUT": "10",
            "REDIS_URL": "unset (state per instance)", "REDIS_CLAIM_IDLE": "30",
        ])
    }

    @Test("bad values are refused with the variable named", arguments: [
        ("PORT", "65536"), ("PORT", "80a"), ("PORT", "-1"), ("PORT", " 80"),
        ("APNS_PRODUCTION_HOST", "host:port"), ("APNS_PRODUCTION_HOST", "[::1"), ("APNS_PRODUCTION_HOST", "a b"),
        ("PUBLIC_URL", "relay.example.com"), ("PUBLIC_URL", "https://relay.example.com/push"),
        ("PUBLIC_URL", "ftp://relay.example.com"), ("PUBLIC_URL", "https://user@relay.example.com"),
        ("PUBLIC_URL", "https://"), ("PUBLIC_URL", "https://relay.example.com?x"),
        ("APNS_DEVELOPMENT_HOST", "host:99999"), ("MAX_BODY_BYTES", "10"), ("MAX_IN_FLIGHT", "many"),
        ("APNS_TIMEOUT", "0"), ("APNS_TIMEOUT", "-3"), ("APNS_TIMEOUT", "nan"), ("THREADS", "0"),
        ("LOG_LEVEL", "loud"), ("METRICS_PORT", "metrics"), ("METRICS_PORT", "70000"),
        ("API_ASYNC", "maybe"), ("API_ASYNC", "2"), ("API_ASYNC_MAX_TRIES", "0"), ("API_ASYNC_MAX_TRIES", "101"),
        ("API_ASYNC_MAX_PENDING", "0"), ("API_ASYNC_MAX_PENDING", "100000001"), ("API_ASYNC_MAX_PENDING", "1e6"),
    ])
    func refusesBadValue(name: String, value: String) {
        #expect {
            try Configuration(environment: [name: value])
        } throws: { error in
            (error as? ConfigurationError)?.variable == name
        }
    }

    @Test("the asynchronous /api/push's variables are read within their ranges")
    func asyncVariables() throws {
        let defaults = try Configuration(environment: [:])
        #expect(!defaults.apiAsync && defaults.apiAsyncMaxTries == 5 && defaults.apiAsyncMaxPending == 1_000_000)
        let set = try Configuration(environment: ["API_ASYNC": "true", "API_ASYNC_MAX_TRIES": "100",
                                                  "API_ASYNC_MAX_PENDING": "100000000"])
        #expect(set.apiAsync && set.apiAsyncMaxTries == 100 && set.apiAsyncMaxPending == 100_000_000)
        #expect(try !Configuration(environment: ["API_ASYNC": "off"]).apiAsync)
        #expect(try Configuration(environment: ["API_ASYNC_MAX_TRIES": "1"]).apiAsyncMaxTries == 1)
    }

    @Test("port 0 asks for any free port, for the listener and for metrics; REUSE_PORT is 1 or 0")
    func portZeroAndReusePort() throws {
        let configuration = try Configuration(environment: ["PORT": "0", "METRICS_PORT": "0", "REUSE_PORT": "off"])
        #expect(configuration.port == 0)
        #expect(configuration.metricsPort == 0)
        #expect(!configuration.reusePort)
        #expect(try Configuration(environment: [:]).reusePort)
        #expect(try Configuration(environment: ["REUSE_PORT": "1"]).reusePort)
        #expect(HostAndPort(parsing: "example.com:0") == nil, "an APNs host needs a real port")
    }

    @Test("empty values count as unset, as in the Go relay")
    func emptyIsUnset() throws {
        let configuration = try Configuration(environment: ["PORT": "", "TOPIC": "", "P12_BASE64": ""])
        #expect(configuration.port == 42069)
        #expect(configuration.topic == nil)
        #expect(configuration.credentialSpec == .p12File(path: "toot-relay.p12", password: ""))
    }

    @Test("token auth wins over P12_BASE64, which wins over P12_FILENAME")
    func credentialPrecedence() throws {
        let all = try Configuration(environment: [
            "TOKEN_AUTH_KEY_FILENAME": "k.p8", "TOKEN_KEY_ID": "ABC123", "TOKEN_TEAM_ID": "TEAM",
            "P12_BASE64": "AAAA", "P12_FILENAME": "x.p12",
        ])
        #expect(all.credentialSpec == .p8File(path: "k.p8", keyID: "ABC123", teamID: "TEAM"))
        let base64 = try Configuration(environment: ["P12_BASE64": "AAAA", "P12_FILENAME": "x.p12"])
        #expect(base64.credentialSpec == .p12Base64("AAAA", password: ""))
        let file = try Configuration(environment: ["P12_FILENAME": "x.p12"])
        #expect(file.credentialSpec == .p12File(path: "x.p12", password: ""))
    }

    @Test("the variables describe an app when they name a credential or toot-relay.p12 exists", arguments: [
        ([String: String](), false, false), ([:], true, true),
        (["P12_FILENAME": "other.p12"], false, true), (["P12_BASE64": "AAAA"], false, true),
        (["TOKEN_AUTH_KEY_FILENAME": "k.p8", "TOKEN_KEY_ID": "K", "TOKEN_TEAM_ID": "T"], false, true),
        (["P12_PASSWORD": "x", "TOPIC": "com.example.app"], false, false),
    ])
    func describesApp(environment: [String: String], defaultFileExists: Bool, expected: Bool) throws {
        let configuration = try Configuration(environment: environment)
        #expect(configuration.describesApp(fileExists: { $0 == "toot-relay.p12" && defaultFileExists }) == expected)
    }

    @Test("PUBLIC_URL is kept as an origin: scheme and host lower-cased, a trailing slash dropped", arguments: [
        ("https://relay.example.com", "https://relay.example.com"), ("HTTPS://Relay.Example.COM/", "https://relay.example.com"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"), ("https://[::1]:8443/", "https://[::1]:8443"),
    ])
    func publicURL(text: String, origin: String) throws {
        #expect(try Configuration(environment: ["PUBLIC_URL": text]).publicURL == origin)
    }

    @Test("a partial token configuration is refused rather than ignored")
    func partialToken() {
        #expect(throws: ConfigurationError.self) {
            try Configuration(environment: ["TOKEN_AUTH_KEY_FILENAME": "k.p8"])
        }
    }

    @Test("the topic comes from TOPIC, else the certificate UID, else cx.c3.toot")
    func topic() throws {
        var configuration = try Configuration(environment: [:])
        #expect(configuration.effectiveTopic(certificateUID: nil) == "cx.c3.toot")
        #expect(configuration.effectiveTopic(certificateUID: "org.example.app") == "org.example.app")
        configuration.topic = "com.override"
        #expect(configuration.effectiveTopic(certificateUID: "org.example.app") == "com.override")
    }

    @Test("host and port parse like a URL authority", arguments: [
        ("example.com", HostAndPort(host: "example.com", port: 443)),
        ("example.com:8443", HostAndPort(host: "example.com", port: 8443)),
        ("127.0.0.1:1", HostAndPort(host: "127.0.0.1", port: 1)),
        ("[::1]", HostAndPort(host: "::1", port: 443)),
        ("[::1]:2197", HostAndPort(host: "::1", port: 2197)),
    ])
    func hostAndPort(text: String, expected: HostAndPort) {
        #expect(HostAndPort(parsing: text) == expected)
        #expect(HostAndPort(parsing: expected.description) == expected)
    }
}
