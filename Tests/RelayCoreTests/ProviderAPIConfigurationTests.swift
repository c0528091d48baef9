import Testing
@testable import RelayCore

/// The provider API's variables: each read into its field,
/// each refused with a message naming the variable, and never a key.
@Suite("The provider API's and feedback's variables")
struct ProviderAPIConfigurationTests {
    static let key1 = "k1-0123456789abcdefXYZ"
    static let key2 = "k2+/0123456789abcdef=="

    @Test("without them the API is off on loopback without keys, and the limits are gorush's")
    func defaults() throws {
        let configuration = try Configuration(environment: [:])
        #expect(configuration.apiPort == nil)
        #expect(configuration.apiBindAddress == "127.0.0.1")
        #expect(configuration.apiKeys.isEmpty)
        #expect(configuration.apiMaxBodyBytes == 1_048_576)
        #expect(configuration.apiMaxNotifications == 100)
        #expect(configuration.apiMaxTokens == 10_000)
        #expect(configuration.apiProvisionDirectory == nil)
        #expect(configuration.feedbackMax == 10_000)
        #expect(configuration.feedbackHookURL == nil)
        #expect(configuration.feedbackHookHeaders.isEmpty)
        #expect(configuration.feedbackHookQueue == 10_000)
        #expect(configuration.feedbackHookTimeout == .seconds(10))
    }

    /// A variable, a value, and what the configuration then holds.
    static let validRows: [(String, String, @Sendable (Configuration) -> Bool)] = [
        ("API_PORT", "8088", { $0.apiPort == 8088 }),
        ("API_PORT", "0", { $0.apiPort == 0 }),
        ("API_PORT", "", { $0.apiPort == nil }),
        ("API_BIND", "0.0.0.0", { $0.apiBindAddress == "0.0.0.0" }),
        ("API_BIND", "", { $0.apiBindAddress == "127.0.0.1" }),
        ("API_KEYS", key1, { $0.apiKeys.map(\.bytes) == [Array(key1.utf8)] }),
        ("API_KEYS", " \(key1) ,\t\(key2)\n", { $0.apiKeys.map(\.bytes) == [Array(key1.utf8), Array(key2.utf8)] }),
        ("API_KEYS", String(repeating: "a", count: 16), { $0.apiKeys.first?.bytes.count == 16 }),
        ("API_KEYS", String(repeating: "a", count: 512), { $0.apiKeys.first?.bytes.count == 512 }),
        ("API_MAX_BODY_BYTES", "1024", { $0.apiMaxBodyBytes == 1024 }),
        ("API_MAX_BODY_BYTES", "67108864", { $0.apiMaxBodyBytes == 67_108_864 }),
        ("API_MAX_NOTIFICATIONS", "1", { $0.apiMaxNotifications == 1 }),
        ("API_MAX_NOTIFICATIONS", "100000", { $0.apiMaxNotifications == 100_000 }),
        ("API_MAX_TOKENS", "1000000", { $0.apiMaxTokens == 1_000_000 }),
        ("API_PROVISION_DIR", "/etc/toot-relay/provision", { $0.apiProvisionDirectory == "/etc/toot-relay/provision" }),
        ("FEEDBACK_MAX", "1", { $0.feedbackMax == 1 }),
        ("FEEDBACK_MAX", "1000000", { $0.feedbackMax == 1_000_000 }),
        ("FEEDBACK_HOOK_URL", "https://hooks.example.com/feedback?token=abc", {
            $0.feedbackHookURL == "https://hooks.example.com/feedback?token=abc"
        }),
        ("FEEDBACK_HOOK_URL", "HTTP://127.0.0.1:8099", { $0.feedbackHookURL == "HTTP://127.0.0.1:8099" }),
        ("FEEDBACK_HOOK_HEADERS", "x-gorush-token:4e989115e09680f44a645519fed6a976", {
            $0.feedbackHookHeaders == [FeedbackHookHeader(name: "x-gorush-token", value: "4e989115e09680f44a645519fed6a976")]
        }),
        ("FEEDBACK_HOOK_HEADERS", "Authorization: Bearer abc def , X-Source:relay", {
            $0.feedbackHookHeaders == [FeedbackHookHeader(name: "Authorization", value: "Bearer abc def"),
                                       FeedbackHookHeader(name: "X-Source", value: "relay")]
        }),
        ("FEEDBACK_HOOK_QUEUE", "1", { $0.feedbackHookQueue == 1 }),
        ("FEEDBACK_HOOK_TIMEOUT", "2.5", { $0.feedbackHookTimeout == .milliseconds(2500) }),
        ("FEEDBACK_HOOK_TIMEOUT", "86400", { $0.feedbackHookTimeout == .seconds(86_400) }),
    ]

    @Test("each valid value lands in its field", arguments: validRows)
    func valid(name: String, value: String, check: @Sendable (Configuration) -> Bool) throws {
        var environment = [name: value]
        // The hook's settings are refused without its URL (hookSettingsNeedTheURL).
        if Configuration.hookSettings.contains(name) { environment["FEEDBACK_HOOK_URL"] = "http://127.0.0.1:9" }
        let configuration = try Configuration(environment: environment)
        #expect(check(configuration), "\(name)=\(value)")
    }

    @Test("a hook setting without FEEDBACK_HOOK_URL is refused in one line naming both", arguments: [
        (["FEEDBACK_HOOK_HEADERS": "X-Token: abc"], "FEEDBACK_HOOK_HEADERS"),
        (["FEEDBACK_HOOK_QUEUE": "10"], "FEEDBACK_HOOK_QUEUE"),
        (["FEEDBACK_HOOK_TIMEOUT": "3"], "FEEDBACK_HOOK_TIMEOUT"),
        // A misspelt URL variable: the hook would be off while it looks configured.
        (["FEEDBACK_HOOK_ULR": "https://hooks.example.com", "FEEDBACK_HOOK_HEADERS": "X-Token: abc"], "FEEDBACK_HOOK_HEADERS"),
        (["FEEDBACK_HOOK_URL": "", "FEEDBACK_HOOK_TIMEOUT": "3"], "FEEDBACK_HOOK_TIMEOUT"),
    ])
    func hookSettingsNeedTheURL(environment: [String: String], variable: String) {
        let outcome = Result { () throws(ConfigurationError) in try Configuration(environment: environment) }
        guard case .failure(let error) = outcome else {
            Issue.record("accepted \(environment.keys.sorted())")
            return
        }
        #expect(error.description == "\(variable): is set but FEEDBACK_HOOK_URL is not; without its URL there is "
            + "no hook (set FEEDBACK_HOOK_URL, or unset \(variable))")
        #expect(!error.description.contains("abc"))
    }

    @Test("the hook's settings with FEEDBACK_HOOK_URL, or none of them, are accepted", arguments: [
        ["FEEDBACK_HOOK_URL": "https://hooks.example.com", "FEEDBACK_HOOK_HEADERS": "X-Token: abc",
         "FEEDBACK_HOOK_QUEUE": "10", "FEEDBACK_HOOK_TIMEOUT": "3"],
        ["FEEDBACK_HOOK_URL": "https://hooks.example.com"],
        ["FEEDBACK_HOOK_HEADERS": "", "FEEDBACK_HOOK_QUEUE": "", "FEEDBACK_HOOK_TIMEOUT": ""],
    ])
    func hookSettingsWithTheURL(environment: [String: String]) throws {
        let configuration = try Configuration(environment: environment)
        #expect(configuration.feedbackHookURL == environment["FEEDBACK_HOOK_URL"])
    }

    /// A variable, a bad value, and the whole message.
    static let invalidRows: [(String, String, String)] = [
        ("API_PORT", "65536", "API_PORT: '65536' is not a port number (0-65535; 0 picks a free port)"),
        ("API_PORT", "api", "API_PORT: 'api' is not a port number (0-65535; 0 picks a free port)"),
        ("API_KEYS", "short-key", "API_KEYS: item 1 is 9 bytes long; at least 16, so that it cannot be guessed (use 32 random bytes in base64, e.g. openssl rand -base64 32)"),
        ("API_KEYS", "\(key1),,\(key2)", "API_KEYS: item 2 is empty (two commas, or one at an end?)"),
        ("API_KEYS", "\(key1),", "API_KEYS: item 2 is empty (two commas, or one at an end?)"),
        ("API_KEYS", "   ", "API_KEYS: item 1 is empty (two commas, or one at an end?)"),
        ("API_KEYS", "\(key1), \(key1)", "API_KEYS: items 1 and 2 are the same key"),
        ("API_KEYS", "abc:def0123456789abc", "API_KEYS: item 1 may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("API_KEYS", "abc def0123456789abc", "API_KEYS: item 1 may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("API_KEYS", "0123456789=abcdef", "API_KEYS: item 1 may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("API_KEYS", "=================", "API_KEYS: item 1 may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("API_KEYS", "clé-0123456789abcdef", "API_KEYS: item 1 may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("API_KEYS", String(repeating: "a", count: 513), "API_KEYS: item 1 is 513 bytes long; at most 512"),
        ("API_MAX_BODY_BYTES", "1023", "API_MAX_BODY_BYTES: '1023' is not a whole number in 1024...67108864"),
        ("API_MAX_BODY_BYTES", "1MiB", "API_MAX_BODY_BYTES: '1MiB' is not a whole number in 1024...67108864"),
        ("API_MAX_NOTIFICATIONS", "0", "API_MAX_NOTIFICATIONS: '0' is not a whole number in 1...100000"),
        ("API_MAX_TOKENS", "-5", "API_MAX_TOKENS: '-5' is not a whole number in 1...1000000"),
        ("API_MAX_TOKENS", "1000001", "API_MAX_TOKENS: '1000001' is not a whole number in 1...1000000"),
        ("API_PROVISION_DIR", "provision", "API_PROVISION_DIR: 'provision' is not an absolute path"),
        ("FEEDBACK_MAX", "0", "FEEDBACK_MAX: '0' is not a whole number in 1...1000000"),
        ("FEEDBACK_HOOK_QUEUE", "many", "FEEDBACK_HOOK_QUEUE: 'many' is not a whole number in 1...1000000"),
        ("FEEDBACK_HOOK_TIMEOUT", "0", "FEEDBACK_HOOK_TIMEOUT: '0' is not a number of seconds in (0, 86400]"),
        ("FEEDBACK_HOOK_TIMEOUT", "ten", "FEEDBACK_HOOK_TIMEOUT: 'ten' is not a number of seconds in (0, 86400]"),
        ("FEEDBACK_HOOK_URL", "ftp://hooks.example.com", "FEEDBACK_HOOK_URL: is not an http:// or https:// URL"),
        ("FEEDBACK_HOOK_URL", "hooks.example.com/feedback", "FEEDBACK_HOOK_URL: is not an http:// or https:// URL"),
        ("FEEDBACK_HOOK_URL", "https://", "FEEDBACK_HOOK_URL: has no host, a port that is not a number, or user information (give credentials in FEEDBACK_HOOK_HEADERS)"),
        ("FEEDBACK_HOOK_URL", "https://user:secret@hooks.example.com", "FEEDBACK_HOOK_URL: has no host, a port that is not a number, or user information (give credentials in FEEDBACK_HOOK_HEADERS)"),
        ("FEEDBACK_HOOK_URL", "https://hooks.example.com:https/", "FEEDBACK_HOOK_URL: has no host, a port that is not a number, or user information (give credentials in FEEDBACK_HOOK_HEADERS)"),
        ("FEEDBACK_HOOK_URL", "https://hooks.example.com/a b", "FEEDBACK_HOOK_URL: holds a space, a control or a non-ASCII character (percent-encode it, RFC 3986 §2.1)"),
        ("FEEDBACK_HOOK_URL", "https://hooks.example.com/\r\nX: y", "FEEDBACK_HOOK_URL: holds a space, a control or a non-ASCII character (percent-encode it, RFC 3986 §2.1)"),
        ("FEEDBACK_HOOK_HEADERS", "Bearer secret-token", "FEEDBACK_HOOK_HEADERS: item 1 has no \":\"; write Name: value, e.g. Authorization: Bearer …"),
        ("FEEDBACK_HOOK_HEADERS", "X-A: 1,", "FEEDBACK_HOOK_HEADERS: item 2 is empty (two commas, or one at an end?)"),
        ("FEEDBACK_HOOK_HEADERS", ": secret-token", "FEEDBACK_HOOK_HEADERS: item 1 has no header name before \":\" (letters, digits and !#$%&'*+-.^_`|~, RFC 9110 §5.6.2)"),
        ("FEEDBACK_HOOK_HEADERS", "X Token: secret-token", "FEEDBACK_HOOK_HEADERS: item 1 has no header name before \":\" (letters, digits and !#$%&'*+-.^_`|~, RFC 9110 §5.6.2)"),
        ("FEEDBACK_HOOK_HEADERS", "X-A: 1, Content-Length: 5", "FEEDBACK_HOOK_HEADERS: item 2 sets Content-Length, which the hook's HTTP client writes itself"),
        ("FEEDBACK_HOOK_HEADERS", "host: evil.example.com", "FEEDBACK_HOOK_HEADERS: item 1 sets host, which the hook's HTTP client writes itself"),
        ("FEEDBACK_HOOK_HEADERS", "X-Token:", "FEEDBACK_HOOK_HEADERS: item 1 gives X-Token no value"),
        ("FEEDBACK_HOOK_HEADERS", "X-Token: secret\rtoken", "FEEDBACK_HOOK_HEADERS: item 1 gives X-Token a value with a control or non-ASCII character"),
        ("FEEDBACK_HOOK_HEADERS", "X-Token: sécret", "FEEDBACK_HOOK_HEADERS: item 1 gives X-Token a value with a control or non-ASCII character"),
    ]

    /// The error `name=value` draws; nil (and an issue recorded) when the
    /// value is accepted.
    static func refusal(_ name: String, _ value: String) -> ConfigurationError? {
        let outcome = Result { () throws(ConfigurationError) in try Configuration(environment: [name: value]) }
        if case .failure(let error) = outcome { return error }
        Issue.record("accepted \(name)")
        return nil
    }

    @Test("each bad value is one line naming the variable and what is wrong", arguments: invalidRows)
    func invalid(name: String, value: String, expected: String) {
        let error = Self.refusal(name, value)
        #expect(error?.variable == name)
        #expect(error?.description == expected)
    }

    /// Values holding a secret that is wrong in some way, and the secret.
    static let secretRows: [(String, String, String)] = [
        ("API_KEYS", "hunter2", "hunter"),
        ("API_KEYS", "\(key1),hunter2", "hunter"),
        ("API_KEYS", "\(key1),hunter2-but-long-enough-now,\(key1)", "k1-0123"),
        ("API_KEYS", "hunter2:hunter2:hunter2", "hunter"),
        ("API_KEYS", "hunter2 " + String(repeating: "x", count: 600), "hunter"),
        ("FEEDBACK_HOOK_HEADERS", "Authorization: Bearer hunter2\u{7F}", "hunter"),
        ("FEEDBACK_HOOK_HEADERS", "hunter2", "hunter"),
        ("FEEDBACK_HOOK_URL", "https://hooks.example.com/?token=hunter2 x", "hunter"),
        ("FEEDBACK_HOOK_URL", "https://me:hunter2@hooks.example.com/", "hunter"),
    ]

    @Test("no error shows a key, a header's value or the hook URL", arguments: secretRows)
    func secretsNotShown(name: String, value: String, secret: String) throws {
        let error = try #require(Self.refusal(name, value))
        #expect(!error.description.contains(secret), "\(error.description)")
    }

    @Test("the API never shares the Web Push port or the metrics port", arguments: [
        (["API_PORT": "42069"], "API_PORT: 42069 is PORT too; the API needs a port of its own"),
        (["API_PORT": "8080", "PORT": "8080"], "API_PORT: 8080 is PORT too; the API needs a port of its own"),
        (["API_PORT": "9100", "METRICS_PORT": "9100"], "API_PORT: 9100 is METRICS_PORT too; the API needs a port of its own"),
    ])
    func ownPort(variables: [String: String], expected: String) {
        #expect(throws: ConfigurationError(variable: "API_PORT", message: String(expected.dropFirst("API_PORT: ".count)))) {
            try Configuration(environment: variables)
        }
        #expect(throws: Never.self) { try Configuration(environment: ["API_PORT": "0", "PORT": "0", "METRICS_PORT": "0"]) }
    }

    @Test("a configuration printed, debug-printed or dumped shows neither its keys nor its hook headers' values")
    func printingHidesSecrets() throws {
        let configuration = try Configuration(environment: [
            "API_KEYS": Self.key1, "FEEDBACK_HOOK_HEADERS": "Authorization: Bearer hunter2-token",
            "FEEDBACK_HOOK_URL": "https://hooks.example.com/feedback",
        ])
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in [String(describing: configuration), String(reflecting: configuration), dumped] {
            #expect(!text.contains("0123456789abcdef"), "\(text)")
            #expect(!text.contains("hunter2"), "\(text)")
        }
        #expect(String(describing: configuration.apiKeys[0]) == "<API key, 22 bytes, hidden>")
        #expect(String(describing: configuration.feedbackHookHeaders[0]) == "Authorization: <hidden>")
    }

    @Test("each new variable has its flag and a line in --help")
    func flags() {
        let flags = Dictionary(uniqueKeysWithValues: Configuration.variables.map { ($0.name, $0.flag) })
        #expect(flags["API_KEYS"] == "--api-keys")
        #expect(flags["FEEDBACK_HOOK_HEADERS"] == "--feedback-hook-headers")
        #expect(flags["API_PROVISION_DIR"] == "--api-provision-dir")
    }
}
