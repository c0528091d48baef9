import RelayCore
import Testing

@testable import Daemon

/// The provider API's keys as the relay loads them: API_KEYS
/// and the apps file's entries in one keyring that reloads replace, and the
/// rule that keeps an API off the network without a key.
private let variableKey = "variable-key-0123456789", fileKey = "file-key-0123456789abc",
    newFileKey = "new-file-key-0123456789"

@Suite("Loading the API keys")
struct APIKeysLoadingTests {
    /// An apps file of one app, `toot`, and the `[[api-key]]` lines given.
    static func file(_ apiKeys: String = "") throws -> String {
        """
        [[app]]
        id = "toot"
        p12-file = "\(try p12())"
        p12-password = "${SECRET}"

        """ + apiKeys
    }

    static func entry(_ name: String, _ key: String, _ apps: String) -> String {
        "[[api-key]]\nname = \"\(name)\"\nkey = \"\(key)\"\napps = \(apps)\n"
    }

    @Test("API_KEYS and the file's keys make one keyring, API_KEYS first, each with its apps")
    func oneKeyring() throws {
        let served = try load(variables: ["API_KEYS": variableKey],
                              file: try Self.file(Self.entry("toot-backend", fileKey, #"["toot"]"#)))
        #expect(served.apiKeys.entries.map(\.name) == ["API_KEYS[1]", "toot-backend"])
        let fromFile = served.apiKeys.authorize(authorization: "Bearer \(fileKey)")
        #expect(fromFile == .key(name: "toot-backend", apps: .only(["toot"])))
        #expect(fromFile.allows(app: "toot") && !fromFile.allows(app: "default"))
        #expect(served.apiKeys.authorize(authorization: "Bearer \(variableKey)") == .key(name: "API_KEYS[1]", apps: .all))
    }

    @Test("a reload keeps the keys of an unchanged file and replaces those of a changed one")
    func reload() throws {
        let loader = AppsLoader()
        let first = try load(loader, file: try Self.file(Self.entry("backend", fileKey, #"["toot"]"#)))
        let same = try load(loader, file: try Self.file(Self.entry("backend", fileKey, #"["toot"]"#)),
                            previous: first.apps)
        #expect(same.apiKeys == first.apiKeys)
        #expect(same.apiKeys.authorize(authorization: "Bearer \(fileKey)") == .key(name: "backend", apps: .only(["toot"])))

        let changed = try load(loader, file: try Self.file(Self.entry("backend", newFileKey, #"["*"]"#)),
                               previous: same.apps)
        #expect(changed.apiKeys.authorize(authorization: "Bearer \(fileKey)") == .invalid)
        #expect(changed.apiKeys.authorize(authorization: "Bearer \(newFileKey)") == .key(name: "backend", apps: .all))

        let none = try load(loader, file: try Self.file(), previous: changed.apps)
        #expect(none.apiKeys.isEmpty)
    }

    @Test("a file key for the app \"default\" needs the variables to describe one")
    func defaultApp() throws {
        let entry = Self.entry("status", fileKey, #"["toot", "default"]"#)
        do {
            _ = try load(file: try Self.file(entry))
            Issue.record("loaded a key for an app that does not exist")
        } catch {
            #expect(String(describing: error) == #"/etc/toot-relay/apps.toml: api-key "status", key "apps": names "default", but the environment variables describe no app (no P12_FILENAME, P12_BASE64 or TOKEN_* credential)"#)
        }
        let withDefault = try load(variables: ["P12_FILENAME": try p12(), "P12_PASSWORD": "secret", "TOPIC": "com.example.default"],
                                   file: try Self.file(entry))
        #expect(withDefault.apiKeys.authorize(authorization: "Bearer \(fileKey)").allows(app: "default"))
    }

    @Test("one key in API_KEYS and in the file is refused, naming both and not the key")
    func sameKeyTwice() throws {
        do {
            _ = try load(variables: ["API_KEYS": fileKey],
                         file: try Self.file(Self.entry("backend", fileKey, #"["toot"]"#)))
            Issue.record("loaded one key twice")
        } catch {
            #expect(String(describing: error) == #"API keys "API_KEYS[1]" and "backend" are the same key; give each its own"#)
        }
    }

    /// An `API_BIND`, and whether only this host can reach it.
    static let loopbackRows: [(String, Bool)] = [
        ("127.0.0.1", true), ("127.1.2.3", true), ("127.255.255.254", true), ("::1", true), ("[::1]", true),
        ("0:0:0:0:0:0:0:1", true), ("::ffff:127.0.0.1", true), ("localhost", true), ("LocalHost", true),
        ("0.0.0.0", false), ("::", false), ("10.0.0.1", false), ("128.0.0.1", false), ("::2", false),
        ("::ffff:10.0.0.1", false), ("fe80::1", false), ("relay.example.com", false), ("localhost.example.com", false),
        ("127.0.0.1.example.com", false), ("", false),
    ]

    @Test("loopback is 127.0.0.0/8, ::1 (also IPv4-mapped) and localhost; wildcards and the rest are not",
          arguments: loopbackRows)
    func loopback(address: String, expected: Bool) {
        #expect(isLoopbackAddress(address) == expected)
    }

    /// `API_PORT`, `API_BIND`, `API_KEYS` (nil: unset), and whether the
    /// relay refuses to start.
    static let exposureRows: [(String?, String?, String?, Bool)] = [
        ("8088", nil, nil, false),
        ("8088", "127.1.2.3", nil, false),
        ("8088", "::1", nil, false),
        ("8088", "localhost", nil, false),
        ("8088", "0.0.0.0", nil, true),
        ("8088", "::", nil, true),
        ("8088", "10.0.0.1", nil, true),
        ("8088", "0.0.0.0", variableKey, false),
        (nil, "0.0.0.0", nil, false),
    ]

    @Test("an API on an address other than loopback needs a key; on loopback keys are optional",
          arguments: exposureRows)
    func exposure(port: String?, bind: String?, keys: String?, refused: Bool) throws {
        var variables: [String: String] = [:]
        variables["API_PORT"] = port
        variables["API_BIND"] = bind
        variables["API_KEYS"] = keys
        let configuration = try Configuration(environment: variables)
        let keyring = try APIKeyring(APIKeyEntry.fromVariable(configuration.apiKeys))
        let problem = apiExposureProblem(configuration: configuration, keyring: keyring)
        #expect((problem != nil) == refused)
        if let problem, let bind {
            #expect(problem == "API_BIND: \(bind) is not a loopback address and there is no API key: anyone who reaches API_PORT could send notifications for every app. Set API_KEYS, or add [[api-key]] entries to APPS_FILE, or set API_BIND to 127.0.0.1 or ::1")
        }
    }

    @Test("start-up and reload apply the rule: a key in the file alone is enough, removing it is refused")
    func exposureOnLoad() throws {
        let variables = ["API_PORT": "8088", "API_BIND": "0.0.0.0"]
        let loader = AppsLoader()
        let served = try load(loader, variables: variables, file: try Self.file(Self.entry("backend", fileKey, #"["*"]"#)))
        #expect(!served.apiKeys.isEmpty)
        #expect(throws: AppsLoadError.self) {
            try load(loader, variables: variables, file: try Self.file(), previous: served.apps)
        }
    }
}
