import Testing
import RelayCore
@testable import AppsFile

/// An `[[api-key]]` with the lines a row gives.
func apiKeyEntry(_ lines: String...) -> String {
    apiKeyEntry(lines)
}

func apiKeyEntry(_ lines: [String]) -> String {
    (["[[api-key]]"] + lines).joined(separator: "\n") + "\n"
}

/// Two apps for the keys to name.
let twoApps = p12App("toot") + p8App("feditext")

/// The provider API's keys in the apps file: `name`, `key`,
/// `apps`, their errors, and no key in any of them.
struct APIKeyEntryTests {
    static let environment = ["STATUS_KEY": "  status-0123456789abcdef\n", "SHORT": "hunter2", "EMPTY": ""]

    func parse(_ text: String) throws(AppsFileError) -> AppsFileContents {
        try AppsFile.parse(text, file: "apps.toml", environment: Self.environment)
    }

    /// The error `text` draws; nil (and an issue recorded) when it parses.
    func refusal(_ text: String) -> AppsFileError? {
        if case .failure(let error) = Result(catching: { () throws(AppsFileError) in try parse(text) }) { return error }
        Issue.record("parsed")
        return nil
    }

    @Test("entries are read in file order, the key from the environment and trimmed, * for every app")
    func entries() throws {
        let contents = try parse(twoApps
            + apiKeyEntry(#"name = "status""#, #"key = "${STATUS_KEY}""#, #"apps = ["toot", "default"]"#)
            + apiKeyEntry(#"name = "Ops.team_1""#, #"key = "ops-0123456789abcdef""#, #"apps = ["*"]"#))
        #expect(contents.apps.map(\.id) == ["toot", "feditext"])
        #expect(contents.apiKeys == [
            APIKeyEntry(name: "status", key: try APIKey(validating: "status-0123456789abcdef"),
                        apps: .only(["toot", "default"])),
            APIKeyEntry(name: "Ops.team_1", key: try APIKey(validating: "ops-0123456789abcdef"), apps: .all),
        ])
    }

    @Test("a file without [[api-key]] has no keys")
    func none() throws {
        #expect(try parse(twoApps).apiKeys.isEmpty)
    }

    static let good = [#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#]

    /// A file and its one-line error: the file, the entry, the field.
    static let rows: [(String, String)] = [
        // The table itself.
        ("api-key = [1]\n" + twoApps, "apps.toml: api-key #1, key \"api-key\": must be a table ([[api-key]]), not an integer"),
        (twoApps + "[api-key]\nname = \"x\"\n", "apps.toml: key \"api-key\": must be an array of tables ([[api-key]]), not a table"),
        (twoApps + String(repeating: "[[api-key]]\n", count: AppsFileLimits.apiKeys + 1), "apps.toml: key \"api-key\": 1001 API keys; at most 1000"),
        // name: required, a string, the syntax; unknown keys first.
        (twoApps + apiKeyEntry(#"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"name\": is required"),
        (twoApps + apiKeyEntry(#"name = 3"#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"name\": must be a string, not an integer"),
        (twoApps + apiKeyEntry(#"name = "status gateway""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"name\": \"status gateway\" may hold only letters, digits, \".\", \"_\" and \"-\""),
        (twoApps + apiKeyEntry(#"name = "API_KEYS[1]""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"name\": \"API_KEYS[1]\" may hold only letters, digits, \".\", \"_\" and \"-\""),
        (twoApps + apiKeyEntry(#"name = """#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"name\": must not be empty"),
        (twoApps + apiKeyEntry(#"name = "\#(String(repeating: "n", count: 65))""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"name\": is 65 characters long; at most 64"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"keys = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"keys\": unknown key; an api-key's keys are apps, client-certificate-sha256, jwt-key-id, jwt-public-key, jwt-team-id, key, name"),
        (twoApps + apiKeyEntry(#"nam = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key #1, key \"nam\": unknown key; an api-key's keys are apps, client-certificate-sha256, jwt-key-id, jwt-public-key, jwt-team-id, key, name"),
        (twoApps + apiKeyEntry(good + ["[api-key.production]"]), "apps.toml: api-key \"status\", key \"production\": unknown key; an api-key's keys are apps, client-certificate-sha256, jwt-key-id, jwt-public-key, jwt-team-id, key, name"),
        // key: required, a string, 16 bytes at least, ${NAME}.
        (twoApps + apiKeyEntry(#"name = "status""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": is required"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = 1234567890123456"#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": must be a string, not an integer"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "hunter2""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": is 7 bytes long; at least 16, so that it cannot be guessed (use 32 random bytes in base64, e.g. openssl rand -base64 32)"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "${SHORT}""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": is 7 bytes long; at least 16, so that it cannot be guessed (use 32 random bytes in base64, e.g. openssl rand -base64 32)"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "${EMPTY}""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": is empty"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "  ""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": is empty"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "${NOPE}""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": the environment variable NOPE is not set"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "hunter2:0123456789abcdef""#, #"apps = ["toot"]"#), "apps.toml: api-key \"status\", key \"key\": may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        // apps: required, an array of strings, ids of this file or default, or * alone.
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#), "apps.toml: api-key \"status\", key \"apps\": is required: the ids of the apps this key may send for, or [\"*\"] for every app"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = "toot""#), "apps.toml: api-key \"status\", key \"apps\": must be an array such as [\"toot\"], not a string"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = []"#), "apps.toml: api-key \"status\", key \"apps\": must name at least one app, or [\"*\"] for every app"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = [1]"#), "apps.toml: api-key \"status\", key \"apps\": must be an array of strings, not an integer"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["beta"]"#), "apps.toml: api-key \"status\", key \"apps\": \"beta\" is not the id of an app in this file, nor \"default\" (the app the environment variables describe)"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot", "toot"]"#), "apps.toml: api-key \"status\", key \"apps\": names \"toot\" twice"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["toot", "*"]"#), "apps.toml: api-key \"status\", key \"apps\": \"*\" stands for every app: give it alone"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["*", "toot"]"#), "apps.toml: api-key \"status\", key \"apps\": \"*\" stands for every app: give it alone"),
        (twoApps + apiKeyEntry(#"name = "status""#, #"key = "status-0123456789abcdef""#, #"apps = ["com.example.feditext"]"#), "apps.toml: api-key \"status\", key \"apps\": \"com.example.feditext\" is not the id of an app in this file, nor \"default\" (the app the environment variables describe)"),
        // Across entries: names and keys unique.
        (twoApps + apiKeyEntry(good) + apiKeyEntry(#"name = "status""#, #"key = "other-0123456789abcdef""#, #"apps = ["*"]"#), "apps.toml: api-key \"status\", key \"name\": another api-key has this name"),
        (twoApps + apiKeyEntry(good) + apiKeyEntry(#"name = "ops""#, #"key = " status-0123456789abcdef ""#, #"apps = ["*"]"#), "apps.toml: api-key \"ops\", key \"key\": is the key of api-key \"status\" too; give each its own"),
        // A file of keys alone still needs an app.
        (apiKeyEntry(good), "apps.toml: key \"app\": no [[app]]: the file must define at least one app"),
    ]

    @Test("an entry that breaks a rule is one line naming the file, the entry and the field", arguments: rows)
    func errors(text: String, expected: String) {
        #expect(refusal(text)?.description == expected)
    }

    /// Entries whose key is wrong in some way, and the key: no error may
    /// show any of it.
    static let secretRows: [(String, String)] = [
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "hunter2""#, #"apps = ["toot"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "hunter2 hunter2 hunter2""#, #"apps = ["toot"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "hunter2\q""#, #"apps = ["toot"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = hunter2"#, #"apps = ["toot"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "hunter2-0123456789""#, #"key = "hunter3-0123456789""#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "${SHORT}""#, #"apps = ["toot"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "hunter2-0123456789""#, #"apps = ["nope"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "hunter2-0123456789""#, #"apps = ["toot"]"#)
            + apiKeyEntry(#"name = "t""#, #"key = "hunter2-0123456789""#, #"apps = ["toot"]"#), "hunter"),
        (twoApps + apiKeyEntry(#"name = "s""#, #"key = "\#(String(repeating: "hunter2", count: 100))""#, #"apps = ["toot"]"#), "hunter"),
    ]

    @Test("no error shows an API key, not even a malformed one", arguments: secretRows)
    func secretsNotShown(text: String, secret: String) throws {
        let error = try #require(refusal(text))
        #expect(!error.description.contains(secret), "\(error.description)")
    }
}
