import APNsCore
import Foundation
import RelayCore
import TestSupport
import Testing

@testable import Daemon

/// Loads with `environment` as the variables, `file` as the apps file's
/// text (nil: no APPS_FILE), and no toot-relay.p12 on disk.
func load(_ loader: AppsLoader = AppsLoader(), variables: [String: String] = [:], file: String? = nil,
                  previous: RelayApps? = nil) throws -> ServedApps {
    var values = variables
    if file != nil { values["APPS_FILE"] = "/etc/toot-relay/apps.toml" }
    let configuration = try Configuration(environment: values)
    return try loader.load(configuration: configuration, appsFileText: file, environment: ["SECRET": "secret"],
                           fileExists: { _ in false }, previous: previous, now: Int(Date().timeIntervalSince1970))
}

func p12() throws -> String { try TestCertificates.path(TestCertificates.clientP12) }
func p8() throws -> String { try TestCertificates.path(TestCertificates.authKeyP8) }

@Suite("Loading the apps")
struct AppsLoaderTests {
    @Test("without an apps file the variables' app is the default app, on one credential for both environments")
    func variablesOnly() throws {
        let served = try load(variables: ["P12_FILENAME": try p12(), "P12_PASSWORD": "secret"])
        let app = try #require(served.apps.defaultApp)
        #expect(app.id == "default" && app.topic == TestCertificates.bundleID)
        #expect(app.production != nil && app.production == app.development)
        #expect(served.credentials.count == 1)
        #expect(served.summaries.count == 2)
        #expect(served.summaries[0].hasPrefix("app default production (default app): topic \(TestCertificates.bundleID), certificate auth ("))
        #expect(served.summaries.allSatisfy { !$0.contains("secret") })
    }

    @Test("without an apps file a missing toot-relay.p12 is an error, as it always was")
    func missingDefaultCertificate() throws {
        #expect(throws: AppsLoadError.self) { try load() }
    }

    @Test("several apps: a token key shared by two apps is one credential; certificates name their topic")
    func severalApps() throws {
        let text = """
            [[app]]
            id = "toot"
            p12-file = "\(try p12())"
            p12-password = "${SECRET}"
            default = true

            [[app]]
            id = "feditext"
            topic = "com.example.feditext"
            alert-loc-key = "apns-default-message"
            p8-file = "\(try p8())"
            key-id = "ABC123DEFG"
            team-id = "TEAM123456"

            [[app]]
            id = "beta"
            topic = "com.example.feditext.beta"
            environments = ["development"]
            p8-file = "\(try p8())"
            key-id = "ABC123DEFG"
            team-id = "TEAM123456"
            """
        let served = try load(file: text)
        #expect(served.apps.all.map(\.id) == ["toot", "feditext", "beta"])
        #expect(served.apps.defaultApp?.id == "toot")
        let toot = try #require(served.apps.app(for: .id("toot")))
        let feditext = try #require(served.apps.app(for: .idOrTopic("com.example.feditext")))
        let beta = try #require(served.apps.app(for: .id("beta")))
        #expect(toot.topic == TestCertificates.bundleID)
        #expect(feditext.alert == .localized(key: "apns-default-message"))
        #expect(beta.production == nil && beta.development == feditext.development)
        #expect(feditext.production == feditext.development)
        #expect(toot.production != feditext.production)
        #expect(served.credentials.count == 2)
        #expect(served.summaries.contains("app beta production: disabled (its pushes get 404)"))
        #expect(served.expiries.filter { $0.notAfter != nil }.map(\.app) == ["toot", "toot"])
        #expect(served.expiries.count == 5)
    }

    @Test("a reload keeps the ids of unchanged credentials and each app's health; a changed file gets a new id")
    func reloadKeepsUnchanged() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = directory + "/key.p8"
        try FileManager.default.copyItem(atPath: try p8(), toPath: key)
        let text = """
            [[app]]
            id = "a"
            topic = "com.example.a"
            p8-file = "\(key)"
            key-id = "ABC123DEFG"
            team-id = "TEAM123456"

            [[app]]
            id = "b"
            p12-file = "\(try p12())"
            p12-password = "secret"
            """
        let loader = AppsLoader()
        let first = try load(loader, file: text)
        first.apps.all[0].health.record(.rejected)
        let second = try load(loader, file: text, previous: first.apps)
        #expect(second.apps.all.map(\.production) == first.apps.all.map(\.production))
        #expect(second.apps.all[0].health === first.apps.all[0].health)
        #expect(second.apps.all[0].health.credentialsRejected)

        // Renewed: the same path, other bytes (here: the same key with a
        // trailing newline, which is still the key).
        try (String(contentsOfFile: key, encoding: .utf8) + "\n").write(toFile: key, atomically: true, encoding: .utf8)
        let third = try load(loader, file: text, previous: second.apps)
        #expect(third.apps.all[0].production != second.apps.all[0].production)
        #expect(third.apps.all[1].production == second.apps.all[1].production)
        #expect(Set(third.credentials.keys).count == 2)
    }

    @Test("loading errors name the file, the app and the key, in one line", arguments: [
        // A token app needs its topic (only a certificate names its app).
        ("[[app]]\nid = \"a\"\np8-file = \"P8\"\nkey-id = \"ABC123DEFG\"\nteam-id = \"TEAM123456\"\n",
         #"/etc/toot-relay/apps.toml: app "a", key "topic": is required"#),
        // A wrong password: the credential's key, not the password.
        ("[[app]]\nid = \"b\"\np12-file = \"P12\"\np12-password = \"hunter2\"\n",
         #"/etc/toot-relay/apps.toml: app "b" (production), key "p12-file" ("#),
        // A key file that does not exist.
        ("[[app]]\nid = \"c\"\ntopic = \"com.example.c\"\np8-file = \"/nonexistent.p8\"\nkey-id = \"ABC123DEFG\"\nteam-id = \"TEAM123456\"\n",
         #"/etc/toot-relay/apps.toml: app "c" (production), key "p8-file" (/nonexistent.p8): "#),
        // Two apps on one topic (the second through its certificate's UID).
        ("[[app]]\nid = \"d\"\ntopic = \"\(TestCertificates.bundleID)\"\np8-file = \"P8\"\nkey-id = \"ABC123DEFG\"\nteam-id = \"TEAM123456\"\n[[app]]\nid = \"e\"\np12-file = \"P12\"\np12-password = \"secret\"\n",
         #"/etc/toot-relay/apps.toml: app "e", key "topic": \#(TestCertificates.bundleID) is already the topic of app "d""#),
    ])
    func errors(file: String, expected: String) throws {
        let text = file.replacingOccurrences(of: "\"P8\"", with: "\"\(try p8())\"")
            .replacingOccurrences(of: "\"P12\"", with: "\"\(try p12())\"")
        do {
            _ = try load(file: text)
            Issue.record("loaded")
        } catch let error as AppsLoadError {
            #expect(error.description.hasPrefix(expected), "\(error.description)")
            #expect(!error.description.contains("\n"))
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test("with an apps file the variables' app is the default only when they name a credential")
    func variablesAppWithFile() throws {
        let text = "[[app]]\nid = \"a\"\ntopic = \"com.example.a\"\np8-file = \"\(try p8())\"\nkey-id = \"ABC123DEFG\"\nteam-id = \"TEAM123456\"\ndefault = true\n"
        // No variables, no toot-relay.p12: the file's default app; no error.
        #expect(try load(file: text).apps.defaultApp?.id == "a")
        // The variables name a certificate: theirs is the default app.
        let both = try load(variables: ["P12_FILENAME": try p12(), "P12_PASSWORD": "secret"], file: text)
        #expect(both.apps.defaultApp?.id == "default")
        #expect(both.apps.all.map(\.id) == ["default", "a"])
        // Without default = true and without the variables: no default app.
        let none = try load(file: text.replacingOccurrences(of: "default = true\n", with: ""))
        #expect(none.apps.defaultApp == nil)
    }
}
