import Foundation
import Testing
@testable import AppsFile

/// An app with a certificate, to which a row adds what it tests.
func p12App(_ id: String = "toot", _ lines: String...) -> String {
    (["[[app]]", "id = \"\(id)\"", "p12-file = \"/etc/toot-relay/\(id).p12\""] + lines).joined(separator: "\n") + "\n"
}

/// An app with a token key (and the topic token auth needs).
func p8App(_ id: String = "feditext", _ lines: String...) -> String {
    (["[[app]]", "id = \"\(id)\"", "topic = \"com.example.\(id)\"", "p8-file = \"/etc/toot-relay/\(id).p8\"",
      "key-id = \"ABC123DEFG\"", "team-id = \"TEAM123456\""] + lines).joined(separator: "\n") + "\n"
}

/// The environment every row parses with.
let rowEnvironment = ["SET": "value", "EMPTY": "", "BIG": String(repeating: "b", count: 40_000)]

struct ValidationErrorTests {
    static let rows: [(String, String)] = [
        // The top level: [[app]] tables, at least one, and [[api-key]] tables.
        ("title = \"x\"\n" + p12App(), "apps.toml: key \"title\": unknown key; the file holds [[app]] and [[api-key]] tables only"),
        ("api-key = \"k\"\n" + p12App(), "apps.toml: key \"api-key\": must be an array of tables ([[api-key]]), not a string"),
        ("", "apps.toml: key \"app\": no [[app]]: the file must define at least one app"),
        ("# nothing but a comment\n", "apps.toml: key \"app\": no [[app]]: the file must define at least one app"),
        ("[app]\nid = \"toot\"\n", "apps.toml: key \"app\": must be an array of tables ([[app]]), not a table"),
        ("app = [1]\n", "apps.toml: app #1, key \"app\": must be a table ([[app]]), not an integer"),
        ("app = []\n", "apps.toml: key \"app\": no [[app]]: the file must define at least one app"),
        // id: required, a string, the syntax, reserved names.
        ("[[app]]\np12-file = \"/x.p12\"\n", "apps.toml: app #1, key \"id\": is required"),
        (p12App().replacingOccurrences(of: "id = \"toot\"", with: "id = 3"), "apps.toml: app #1, key \"id\": must be a string, not an integer"),
        (p12App("Toot"), "apps.toml: app #1, key \"id\": \"Toot\" may hold only lower-case letters, digits, \".\", \"_\" and \"-\""),
        (p12App("production"), "apps.toml: app #1, key \"id\": \"production\" is reserved: it is an environment in /relay-to/<environment>/… URLs"),
        (p12App("default"), "apps.toml: app #1, key \"id\": \"default\" is reserved: \"default\" names the app the environment variables describe"),
        (p12App("_health"), "apps.toml: app #1, key \"id\": \"_health\" is reserved: /relay-to/_health is the health check"),
        (p12App("message"), "apps.toml: app #1, key \"id\": \"message\" is reserved: /relay-to/message/<apns-id> is the Location of a delivered notification"),
        (p12App("api"), "apps.toml: app #1, key \"id\": \"api\" is reserved: /relay-to/api is kept for the relay's API"),
        (p12App(".."), "apps.toml: app #1, key \"id\": \"..\" cannot be a URL path segment (RFC 3986 §5.2.4)"),
        (p12App(""), "apps.toml: app #1, key \"id\": must not be empty"),
        (p12App(String(repeating: "a", count: 65)), "apps.toml: app #1, key \"id\": is 65 characters long; at most 64"),
        // Unknown keys (typos), reported before a missing id.
        (p12App("toot", "p12-pasword = \"x\""), "apps.toml: app \"toot\", key \"p12-pasword\": unknown key; an app's keys are alert, alert-loc-key, default, environments, fcm-credentials, id, key-id, p12-base64, p12-file, p12-password, p8, p8-file, restricted-only, retired, team-id, topic, [app.production], [app.development]"),
        ("[[app]]\nidd = \"toot\"\np12-file = \"/x.p12\"\n", "apps.toml: app #1, key \"idd\": unknown key; an app's keys are alert, alert-loc-key, default, environments, fcm-credentials, id, key-id, p12-base64, p12-file, p12-password, p8, p8-file, restricted-only, retired, team-id, topic, [app.production], [app.development]"),
        // retired: an id, maybe a topic, nothing else; its id and topic are
        // still the app's own.
        (p12App("old", "retired = true"), "apps.toml: app \"old\", key \"p12-file\": the app is retired: a retired app has an id, maybe a topic, and nothing else"),
        ("[[app]]\nid = \"old\"\nretired = true\ndefault = true\n", "apps.toml: app \"old\", key \"default\": the app is retired: a retired app has an id, maybe a topic, and nothing else"),
        ("[[app]]\nid = \"old\"\nretired = \"yes\"\n", "apps.toml: app \"old\", key \"retired\": must be true or false, not a string"),
        ("[[app]]\nid = \"old\"\nretired = true\n" + p12App("old"), "apps.toml: app \"old\", key \"id\": another app has this id"),
        ("[[app]]\nid = \"old\"\ntopic = \"com.example.old\"\nretired = true\n" + p12App("toot", "topic = \"com.example.old\""), "apps.toml: app \"toot\", key \"topic\": \"com.example.old\" is the topic of app \"old\" too"),
        // topic, environments, alert, default.
        (p12App("toot", "topic = \"com example\""), "apps.toml: app \"toot\", key \"topic\": \"com example\" is not a bundle id: letters, digits, \".\", \"-\" and \"_\" only"),
        (p12App("toot", "topic = \"\(String(repeating: "a", count: 256))\""), "apps.toml: app \"toot\", key \"topic\": is 256 characters long; at most 255"),
        (p12App("toot", "topic = 1979-05-27"), "apps.toml: app \"toot\", key \"topic\": must be a string, not a date"),
        (p12App("toot", "environments = \"production\""), "apps.toml: app \"toot\", key \"environments\": must be an array such as [\"production\"], not a string"),
        (p12App("toot", "environments = []"), "apps.toml: app \"toot\", key \"environments\": must name at least one environment"),
        (p12App("toot", "environments = [\"staging\"]"), "apps.toml: app \"toot\", key \"environments\": \"staging\" is not an environment: \"production\" or \"development\""),
        (p12App("toot", "environments = [\"production\", \"production\"]"), "apps.toml: app \"toot\", key \"environments\": names \"production\" twice"),
        (p12App("toot", "environments = [1]"), "apps.toml: app \"toot\", key \"environments\": must be an array of strings, not an integer"),
        (p12App("toot", "alert = \"New\"", "alert-loc-key = \"new\""), "apps.toml: app \"toot\", key \"alert-loc-key\": alert is set too; give one of alert and alert-loc-key"),
        (p12App("toot", "alert = \"\""), "apps.toml: app \"toot\", key \"alert\": must not be empty"),
        (p12App("toot", "alert-loc-key = \"\(String(repeating: "k", count: 257))\""), "apps.toml: app \"toot\", key \"alert-loc-key\": is 257 bytes long; at most 256, as it travels in every payload"),
        (p12App("toot", "default = \"yes\""), "apps.toml: app \"toot\", key \"default\": must be true or false, not a string"),
        // Credentials: one source, key-id and team-id with a token key, a topic for it.
        (p12App("toot", "p8 = \"${SET}\""), "apps.toml: app \"toot\", key \"p8\": p12-file is set too; give one credential source here"),
        ("[[app]]\nid = \"toot\"\n", "apps.toml: app \"toot\", key \"production\": no credential: set p12-file, p12-base64, p8-file or p8 in the app or in [app.production]"),
        ("[[app]]\nid = \"toot\"\ntopic = \"t\"\np8-file = \"/k.p8\"\nteam-id = \"T\"\n", "apps.toml: app \"toot\", key \"key-id\": is required with p8-file or p8 (in the app or in [app.production])"),
        ("[[app]]\nid = \"toot\"\np8-file = \"/k.p8\"\nkey-id = \"K\"\nteam-id = \"T\"\n", "apps.toml: app \"toot\", key \"topic\": is required with a token key (p8-file): it has no certificate to take the topic from"),
        (p8App("feditext").replacingOccurrences(of: "ABC123DEFG", with: "ABC DEFG"), "apps.toml: app \"feditext\", key \"key-id\": \"ABC DEFG\" may hold only letters, digits, \".\", \"_\" and \"-\""),
        // [app.<environment>] tables: credential keys only, enabled environments only.
        (p8App("feditext", "[app.development]", "key-id = \"SANDBOX 123\""), "apps.toml: app \"feditext\", key \"development.key-id\": \"SANDBOX 123\" may hold only letters, digits, \".\", \"_\" and \"-\""),
        (p8App("feditext", "environments = [\"production\"]", "[app.development]", "key-id = \"SANDBOX123\""), "apps.toml: app \"feditext\", key \"development\": environments does not enable development: remove [app.development] or add \"development\" to environments"),
        (p8App("feditext", "[app.development]", "topic = \"com.example.beta\""), "apps.toml: app \"feditext\", key \"development.topic\": only credential keys can be set per environment: p12-file, p12-base64, p8-file, p8, p12-password, key-id, team-id"),
        (p8App("feditext", "development = \"sandbox\""), "apps.toml: app \"feditext\", key \"development\": must be a table ([app.development]), not a string"),
        (p8App("feditext", "[app.development]", "p8-file = \"/a.p8\"", "p12-base64 = \"${SET}\""), "apps.toml: app \"feditext\", key \"development.p8-file\": p12-base64 is set too; give one credential source here"),
        (p12App("toot", "[app.development]", "key-id = \"SANDBOX123\""), "apps.toml: app \"toot\", key \"development.key-id\": does not apply: this environment's credential is p12-file"),
        (p8App("feditext", "[app.production]", "p12-password = \"${SET}\""), "apps.toml: app \"feditext\", key \"production.p12-password\": does not apply: this environment's credential is p8-file"),
        // Keys no enabled environment uses.
        (p12App("toot", "key-id = \"ABC123DEFG\""), "apps.toml: app \"toot\", key \"key-id\": is not used: no environment's credential is p8-file or p8"),
        (p8App("feditext", "p12-password = \"${SET}\""), "apps.toml: app \"feditext\", key \"p12-password\": is not used: no environment's credential is p12-file or p12-base64"),
        (p12App("toot", "environments = [\"development\"]", "[app.development]", "p12-file = \"/dev.p12\""), "apps.toml: app \"toot\", key \"p12-file\": is not used: every enabled environment's table gives its own credential source"),
        // Across apps: ids, topics (nor another app's id), one default.
        (p12App("toot") + p12App("toot"), "apps.toml: app \"toot\", key \"id\": another app has this id"),
        (p12App("toot", "topic = \"cx.c3.toot\"") + p12App("beta", "topic = \"cx.c3.toot\""), "apps.toml: app \"beta\", key \"topic\": \"cx.c3.toot\" is the topic of app \"toot\" too"),
        (p12App("toot") + p12App("beta", "topic = \"toot\""), "apps.toml: app \"beta\", key \"topic\": \"toot\" is the id of another app; /push/<app-or-topic>/… would name both"),
        (p12App("toot", "topic = \"beta\"") + p12App("beta"), "apps.toml: app \"beta\", key \"id\": \"beta\" is the topic of app \"toot\"; /push/<app-or-topic>/… would name both"),
        (p12App("toot", "default = true") + p12App("beta", "default = true"), "apps.toml: app \"beta\", key \"default\": app \"toot\" is the default already; at most one app has default = true"),
        // ${NAME}: unset, malformed.
        (p12App("${NOPE}"), "apps.toml: app #1, key \"id\": the environment variable NOPE is not set"),
        (p12App("toot", "p12-password = \"pass${word\""), "apps.toml: app \"toot\", key \"p12-password\": \"${\" must start a reference such as ${NAME} (a letter or \"_\", then letters, digits or \"_\", then \"}\"); write \"$${\" for a literal \"${\""),
        (p12App("toot", "p12-password = \"${9LIVES}\""), "apps.toml: app \"toot\", key \"p12-password\": \"${\" must start a reference such as ${NAME} (a letter or \"_\", then letters, digits or \"_\", then \"}\"); write \"$${\" for a literal \"${\""),
        // TOML syntax: line and column; what toml++ quotes from a value is hidden.
        (p12App("toot", "p12-file = \"/x.p12\""), "apps.toml:4:12: Error while parsing key-value pair: cannot redefine existing string 'p12-file'"),
        ("[[app]]\nid = \"toot\"\np12-file = \"/x.p12\n", "apps.toml:3:19: Error while parsing string: unescaped control characters other than TAB (U+0009) are explicitly prohibited"),
        (p12App("toot", "p12-password = \"hunter\\q2\""), "apps.toml:4:24: Error while parsing string: unknown escape sequence '…'"),
        (p12App("toot", "p12-password = 123456789012345678901234567890"), "apps.toml:4:46: Error while parsing decimal integer: '…' is not representable in 64 bits"),
        (p12App("toot", "p12-password = hunter2"), "apps.toml:4:16: Error while parsing value: could not determine value type"),
        // Wrong types, empty and oversized secrets: never the value.
        (p12App("toot", "p8 = 3"), "apps.toml: app \"toot\", key \"p8\": must be a string, not an integer"),
        (p12App("toot", "p12-base64 = \"\""), "apps.toml: app \"toot\", key \"p12-base64\": must not be empty"),
        ("[[app]]\nid = \"toot\"\np12-base64 = \"\(String(repeating: "A", count: 65_537))\"\n", "apps.toml: app \"toot\", key \"p12-base64\": is 65537 bytes long; at most 65536"),
        ("[[app]]\nid = \"toot\"\np12-base64 = \"${BIG}${BIG}\"\n", "apps.toml: app \"toot\", key \"p12-base64\": is 80000 bytes long after ${…} expansion; at most 65536"),
        // What the text may not hold, and the limits.
        (p12App("toot", "p12-password = \"pass\\u0000word\""), "apps.toml:4:21: a \\u0000 escape: keys and values may not hold U+0000"),
        (p12App("toot", "p12-password = \"pass\u{FFFD}word\""), "apps.toml:4:21: not UTF-8 (or U+FFFD, the replacement character, which the file may not hold)"),
        (p12App("toot", "p12-password = \"pass\u{0}word\""), "apps.toml:4:21: a NUL character (U+0000); the file must be text"),
        (String(repeating: "#", count: AppsFileLimits.fileBytes + 1), "apps.toml: is 1048577 bytes long; at most 1048576 (1 MiB)"),
        (String(repeating: "[[app]]\n", count: AppsFileLimits.apps + 1), "apps.toml: key \"app\": 1001 apps; at most 1000"),
        // Keys are quoted on one line; toml++ keeps key names; a table of an unknown environment.
        (p12App("toot", "\"a\\nb\" = 1"), "apps.toml: app \"toot\", key \"a\\u{a}b\": unknown key; an app's keys are alert, alert-loc-key, default, environments, fcm-credentials, id, key-id, p12-base64, p12-file, p12-password, p8, p8-file, restricted-only, retired, team-id, topic, [app.production], [app.development]"),
        (p12App("toot", "id = \"again\""), "apps.toml:4:6: Error while parsing key-value pair: cannot redefine existing string 'id'"),
        (p12App("toot", "[app.staging]", "p12-file = \"/x\""), "apps.toml: app \"toot\", key \"staging\": unknown key; an app's keys are alert, alert-loc-key, default, environments, fcm-credentials, id, key-id, p12-base64, p12-file, p12-password, p8, p8-file, restricted-only, retired, team-id, topic, [app.production], [app.development]"),
    ]

    @Test("a file that breaks a rule is one line naming the file, the app and the key", arguments: rows)
    func errors(text: String, expected: String) {
        do {
            let apps = try AppsFile.parse(text, file: "apps.toml", environment: rowEnvironment)
            Issue.record("parsed: \(apps)")
        } catch {
            #expect(error.description == expected)
        }
    }

    /// Files with a secret (`p12-password`, `p12-base64`, `p8`) that is
    /// wrong in some way, and the secret: no error may show any of it.
    /// Lines with a secret (`p12-password`, `p12-base64`, `p8`) that is
    /// wrong in some way, added to a certificate app, and the secret: no
    /// error may show any of it.
    static let secretLines: [(String, String)] = [
        ("p12-password = \"hunter\\q2\"", "hunter"),
        ("p12-password = \"hunter\\q2\"", "q2"),
        ("p12-password = 123456789012345678901234567890", "12345"),
        ("p12-password = hunter2", "hunter"),
        ("p12-password = \"hunter2\" trailing", "trailing"),
        ("p12-password = \"hunter2\" trailing", "'t'"),
        ("p12-password = 'hunter2", "hunter"),
        ("p12-password = \"${hunter2 x}\"", "hunter"),
        ("p12-password = \"hunter2\"\np12-password = \"hunter3\"", "hunter"),
    ]

    /// Whole files with a wrong secret, and the secret.
    static let secretFiles: [(String, String)] = [
        (p8App("feditext", "p12-password = \"hunter2\""), "hunter"),
        (p8App("feditext", "[app.development]", "p12-password = \"hunter2\""), "hunter"),
        ("[[app]]\nid = \"x\"\np8 = \"\"\"\n-----BEGIN hunter2\n", "hunter"),
        ("[[app]]\nid = \"x\"\np8 = \"-----BEGIN hunter2\"\n", "hunter"),
        ("[[app]]\nid = \"x\"\np12-base64 = \"${BIG}${BIG}\"\n", "bbbb"),
        ("[[app]]\nid = \"x\"\np12-base64 = \"\(String(repeating: "Q", count: 70_000))\"\n", "QQQQ"),
        ("[[app]]\nid = \"x\"\np12-base64 = \"hunter2\"\np8 = \"hunter2\"\n", "hunter"),
        ("[[app]]\nid = \"x\"\np12-file = \"/x.p12\"\np12-password = \"hunter\\u0000\"\n", "hunter"),
        ("[[app]]\nid = \"x\"\np12-file = \"/x.p12\"\np12-password = \"hunter\u{FFFD}\"\n", "hunter"),
    ]

    static let secretRows = secretLines.map { (p12App("toot", $0.0), $0.1) } + secretFiles

    @Test("no error shows a secret, not even a malformed one", arguments: secretRows)
    func secretsNotShown(text: String, secret: String) {
        #expect(throws: AppsFileError.self) {
            try AppsFile.parse(text, file: "apps.toml", environment: rowEnvironment)
        }
        do {
            _ = try AppsFile.parse(text, file: "apps.toml", environment: rowEnvironment)
        } catch {
            #expect(!error.description.contains(secret), "\(error.description)")
        }
    }

    @Test("a description stays one line whatever the file's name, key or message holds",
          arguments: [
              (AppsFileError(file: "/etc/a\nb.toml", app: "toot", key: "k\u{2028}", message: "bad\r\nthing"),
               "/etc/a\\u{a}b.toml: app \"toot\", key \"k\\u{2028}\": bad\\u{d}\\u{a}thing"),
              (AppsFileError(file: "apps.toml", app: "app #2", key: "id", message: "is required"),
               "apps.toml: app #2, key \"id\": is required"),
              (AppsFileError(file: "apps.toml", app: "toot", message: "m"), "apps.toml: app \"toot\": m"),
              (AppsFileError(file: "apps.toml", key: "a\"b\\", message: "m"), "apps.toml: key \"a\\\"b\\\\\": m"),
              (AppsFileError(file: "apps.toml", line: 3, column: 7, message: "syntax\u{85}"), "apps.toml:3:7: syntax\\u{85}"),
              (AppsFileError(file: "apps.toml", app: "toot", key: String(repeating: "k", count: 81), message: "m"),
               "apps.toml: app \"toot\", key \"\(String(repeating: "k", count: 80))…\": m"),
          ])
    func oneLine(error: AppsFileError, expected: String) {
        #expect(error.description == expected)
    }
}
