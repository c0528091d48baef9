import APNsCore
import FCMCore
import Foundation
import RelayCore
import TestSupport
import Testing

@testable import Daemon

/// A service account's file, with `changes` (raw JSON values; nil: left out).
func serviceAccountText(_ changes: [String: String?] = [:]) -> String {
    let pem = "-----BEGIN PRIVATE KEY-----\\n\(FCMTestAccount.keyBody)\\n-----END PRIVATE KEY-----\\n"
    let fields: [(String, String)] = [
        ("type", "\"service_account\""), ("project_id", "\"droid-project\""),
        ("private_key_id", "\"0123456789abcdef\""), ("private_key", "\"\(pem)\""),
        ("client_email", "\"relay@droid-project.iam.gserviceaccount.com\""),
        ("token_uri", "\"https://oauth2.googleapis.com/token\""),
    ]
    var members: [String] = []
    for (name, value) in fields {
        if let change = changes[name] {
            if let raw = change { members.append("\"\(name)\": \(raw)") }
        } else {
            members.append("\"\(name)\": \(value)")
        }
    }
    return "{\n  " + members.joined(separator: ",\n  ") + "\n}\n"
}

/// Loads with the service-account files `files` (path → text) readable.
func loadWithFCM(_ loader: AppsLoader = AppsLoader(), variables: [String: String] = [:], file: String? = nil,
                 files: [String: String], previous: RelayApps? = nil) throws -> ServedApps {
    var values = variables
    if file != nil { values["APPS_FILE"] = "/etc/toot-relay/apps.toml" }
    let configuration = try Configuration(environment: values)
    return try loader.load(configuration: configuration, appsFileText: file, environment: [:],
                           fileExists: { _ in false }, previous: previous, now: Int(Date().timeIntervalSince1970),
                           readFCMFile: { files[$0].map { Array($0.utf8) } })
}

@Suite("Loading the apps: FCM credentials")
struct FCMAccountLoadingTests {
    static let path = "/etc/toot-relay/firebase.json"

    @Test("FCM_CREDENTIALS_FILE alone describes an Android default app")
    func defaultAppFCMOnly() throws {
        let served = try loadWithFCM(variables: ["FCM_CREDENTIALS_FILE": Self.path],
                                     files: [Self.path: serviceAccountText()])
        let app = try #require(served.apps.defaultApp)
        #expect(app.fcm?.account.projectID == "droid-project")
        #expect(!app.servesAPNs)
        #expect(served.credentials.isEmpty)
        #expect(served.summaries == [
            "app default fcm (default app): service account relay@droid-project.iam.gserviceaccount.com "
                + "(key 0123456789abcdef, project droid-project) from \(Self.path), via /relay-to/fcm/<token>, "
                + "/relay-to/default/fcm/<token>",
        ])
    }

    @Test("FCM_CREDENTIALS_BASE64 is the same file, base64")
    func defaultAppBase64() throws {
        let base64 = Data(serviceAccountText().utf8).base64EncodedString()
        let served = try loadWithFCM(variables: ["FCM_CREDENTIALS_BASE64": base64], files: [:])
        #expect(served.apps.defaultApp?.fcm?.account.clientEmail == "relay@droid-project.iam.gserviceaccount.com")
        #expect(served.summaries.first?.contains("from FCM_CREDENTIALS_BASE64") == true)
    }

    @Test("the default app with APNs and FCM credentials serves both")
    func defaultAppBoth() throws {
        let served = try loadWithFCM(variables: ["P12_FILENAME": try p12(), "P12_PASSWORD": "secret",
                                                 "FCM_CREDENTIALS_FILE": Self.path],
                                     files: [Self.path: serviceAccountText()])
        let app = try #require(served.apps.defaultApp)
        #expect(app.servesAPNs && app.fcm != nil)
        #expect(served.summaries.count == 3)
    }

    @Test("an apps file app with fcm-credentials only, and one with both")
    func appsFileApps() throws {
        let text = """
            [[app]]
            id = "droid"
            fcm-credentials = "\(Self.path)"
            default = true

            [[app]]
            id = "toot"
            p12-file = "\(try p12())"
            p12-password = "secret"
            fcm-credentials = "\(Self.path)"
            """
        let served = try loadWithFCM(file: text, files: [Self.path: serviceAccountText()])
        let droid = try #require(served.apps.app(for: .id("droid")))
        #expect(droid.fcm != nil && !droid.servesAPNs && droid.topic == "")
        #expect(served.apps.defaultApp?.id == "droid")
        let toot = try #require(served.apps.app(for: .id("toot")))
        #expect(toot.fcm != nil && toot.servesAPNs)
        #expect(served.summaries.contains { $0.hasPrefix("app droid fcm (default app): service account ") })
        #expect(!served.summaries.contains { $0.hasPrefix("app droid production") })
    }

    @Test("a reload keeps an app's FCM health, apart from its APNs health")
    func healthKept() throws {
        let loader = AppsLoader()
        let variables = ["FCM_CREDENTIALS_FILE": Self.path]
        let first = try loadWithFCM(loader, variables: variables, files: [Self.path: serviceAccountText()])
        let health = try #require(first.apps.defaultApp?.fcm?.health)
        health.record(.rejected)
        let second = try loadWithFCM(loader, variables: variables, files: [Self.path: serviceAccountText()],
                                     previous: first.apps)
        #expect(second.apps.defaultApp?.fcm?.health === health)
        #expect(second.apps.defaultApp?.health !== health)
    }

    /// Broken files: one line naming where, the file and the field; never the key.
    static let broken: [([String: String?], String)] = [
        (["client_email": nil], "client_email is missing"),
        (["project_id": "3"], "project_id is"),
        (["private_key": "\"not a key \(FCMTestAccount.keyBody)\""], "private_key"),
        (["private_key": "\"-----BEGIN PRIVATE KEY-----\\n\(FCMTestAccount.keyBody)\""], "private_key"),
        (["token_uri": "\"ftp://x\""], "token_uri"),
    ]

    @Test("a broken file named by the variable is one line naming the file and the field", arguments: broken)
    func brokenDefaultFile(_ row: ([String: String?], String)) throws {
        do {
            _ = try loadWithFCM(variables: ["FCM_CREDENTIALS_FILE": Self.path],
                                files: [Self.path: serviceAccountText(row.0)])
            Issue.record("loaded a broken file")
        } catch {
            let line = String(describing: error)
            #expect(line.hasPrefix("FCM_CREDENTIALS_FILE (\(Self.path)): the file "), "\(line)")
            #expect(line.contains(row.1), "\(line)")
            #expect(!line.contains(FCMTestAccount.keyBody))
            #expect(!line.contains("\n"))
        }
    }

    @Test("a broken file named by the apps file names the file, the app and the key", arguments: broken)
    func brokenAppFile(_ row: ([String: String?], String)) throws {
        do {
            _ = try loadWithFCM(file: "[[app]]\nid = \"droid\"\nfcm-credentials = \"\(Self.path)\"\n",
                                files: [Self.path: serviceAccountText(row.0)])
            Issue.record("loaded a broken file")
        } catch {
            let line = String(describing: error)
            #expect(line.hasPrefix("/etc/toot-relay/apps.toml: app \"droid\", key \"fcm-credentials\": \(Self.path): "),
                    "\(line)")
            #expect(line.contains(row.1), "\(line)")
            #expect(!line.contains(FCMTestAccount.keyBody))
        }
    }

    @Test("hostile inputs: an unreadable file, not JSON, not base64, too large")
    func hostile() throws {
        let cases: [([String: String], [String: String], String)] = [
            (["FCM_CREDENTIALS_FILE": "/nope.json"], [:], "FCM_CREDENTIALS_FILE (/nope.json): cannot be read"),
            (["FCM_CREDENTIALS_FILE": Self.path], [Self.path: "{\"private_key\": \"\(FCMTestAccount.keyBody)"],
             "FCM_CREDENTIALS_FILE (\(Self.path)): the file is not JSON"),
            (["FCM_CREDENTIALS_FILE": Self.path], [Self.path: String(repeating: " ", count: 70_000)],
             "FCM_CREDENTIALS_FILE (\(Self.path)): the file is 70000 bytes"),
            (["FCM_CREDENTIALS_FILE": Self.path], [Self.path: "[]"], "FCM_CREDENTIALS_FILE (\(Self.path)): the file is"),
            (["FCM_CREDENTIALS_BASE64": "!!!" + FCMTestAccount.keyBody], [:], "FCM_CREDENTIALS_BASE64: not base64"),
            (["FCM_CREDENTIALS_BASE64": Data("{}".utf8).base64EncodedString()], [:],
             "FCM_CREDENTIALS_BASE64: the decoded file"),
        ]
        for (variables, files, prefix) in cases {
            do {
                _ = try loadWithFCM(variables: variables, files: files)
                Issue.record("loaded \(variables)")
            } catch {
                let line = String(describing: error)
                #expect(line.hasPrefix(prefix), "\(line)")
                #expect(!line.contains(FCMTestAccount.keyBody))
            }
        }
    }
}
