import APNsCore
@testable import AppsFile
import Foundation
import RelayCore
import Testing

/// The apps file specification's example and the shipped config/apps.example.toml.
struct ExampleTests {
    /// The two-app example of the apps file's specification, byte for byte.
    static let issueExample = """
        [[app]]
        id = "toot"                        # the app's name in URLs
        topic = "cx.c3.toot"               # apns-topic; default: the certificate's UID
        p12-file = "/etc/toot-relay/toot.p12"
        p12-password = "${TOOT_P12_PASSWORD}"   # ${NAME} reads the environment

        [[app]]
        id = "feditext"
        topic = "com.example.feditext"
        alert-loc-key = "apns-default-message"
        p8-file = "/etc/toot-relay/AuthKey_ABC123DEFG.p8"
        key-id = "ABC123DEFG"
        team-id = "TEAM123456"

          # Overrides for one environment, e.g. a key Apple scoped to the sandbox
          [app.development]
          p8-file = "/etc/toot-relay/AuthKey_SANDBOX123.p8"
          key-id = "SANDBOX123"

        """

    /// The second app, in both examples: its sandbox key replaces
    /// the app's, the team is inherited.
    static let feditext = AppDefinition(
        id: "feditext", topic: "com.example.feditext", alert: .localized(key: "apns-default-message"), isDefault: false,
        credentials: [
            .production: .p8File(path: "/etc/toot-relay/AuthKey_ABC123DEFG.p8", keyID: "ABC123DEFG", teamID: "TEAM123456"),
            .development: .p8File(path: "/etc/toot-relay/AuthKey_SANDBOX123.p8", keyID: "SANDBOX123", teamID: "TEAM123456"),
        ])

    @Test("the documented two-app example parses to both apps, with feditext's sandbox key and toot's password from the environment")
    func issueExample() throws {
        let apps = try AppsFile.parse(Self.issueExample, file: "apps.toml", environment: ["TOOT_P12_PASSWORD": "s3cret"]).apps
        let tootCertificate = CredentialSpec.p12File(path: "/etc/toot-relay/toot.p12", password: "s3cret")
        #expect(apps == [
            AppDefinition(id: "toot", topic: "cx.c3.toot", alert: nil, isDefault: false,
                          credentials: [.production: tootCertificate, .development: tootCertificate]),
            Self.feditext,
        ])
    }

    @Test("the documented two-app example without TOOT_P12_PASSWORD names the variable, the app and the key")
    func issueExampleWithoutPassword() {
        #expect(throws: AppsFileError(file: "apps.toml", app: "toot", key: "p12-password",
                                      message: "the environment variable TOOT_P12_PASSWORD is not set")) {
            try AppsFile.parse(Self.issueExample, file: "apps.toml", environment: [:])
        }
    }

    /// config/apps.example.toml, found from this file (Tests/AppsFileTests/ → the repository root).
    static func shippedExample() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/apps.example.toml")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test("the shipped config/apps.example.toml parses with its placeholders set")
    func shippedExampleParses() throws {
        let pem = "-----BEGIN PRIVATE KEY-----\nplaceholder\n-----END PRIVATE KEY-----\n"
        let contents = try AppsFile.parse(try Self.shippedExample(), file: "config/apps.example.toml",
                                          environment: ["TOOT_P12_PASSWORD": "pw", "MONA_SANDBOX_P8": pem,
                                                        "STATUS_GATEWAY_API_KEY": " status-gateway-key-0123456789\n",
                                                        "OPS_API_KEY": "ops-key-0123456789abcdef"])
        #expect(contents.apiKeys == [
            APIKeyEntry(name: "status-gateway", key: try APIKey(validating: "status-gateway-key-0123456789"),
                        apps: .only(["toot", "feditext"])),
            APIKeyEntry(name: "ops", key: try APIKey(validating: "ops-key-0123456789abcdef"), apps: .all),
        ])
        let apps = contents.apps
        let toot = CredentialSpec.p12File(path: "/etc/toot-relay/toot.p12", password: "pw")
        #expect(apps == [
            AppDefinition(id: "toot", topic: "cx.c3.toot", alert: nil, isDefault: true,
                          credentials: [.production: toot, .development: toot]),
            Self.feditext,
            AppDefinition(id: "mona", topic: "com.example.mona", alert: .text("New notification"), isDefault: false,
                          credentials: [
                              .production: .p8File(path: "/etc/toot-relay/AuthKey_PROD456789.p8",
                                                   keyID: "PROD456789", teamID: "TEAM654321"),
                              .development: .p8(pem: pem, keyID: "SANDBOX789", teamID: "TEAM654321"),
                          ]),
            AppDefinition(id: "oldclient", topic: "com.example.oldclient", credentials: [:], isRetired: true),
        ])
    }

    @Test("every key an app or an api-key may hold is documented in the shipped example")
    func shippedExampleDocumentsEveryKey() throws {
        let text = try Self.shippedExample()
        for key in AppsFileKeys.inApp.union(AppsFileKeys.inAPIKey).sorted() {
            let documented = ["\n# \(key) (", "\n#   \(key) ", "[app.\(key)]"].contains { text.contains($0) }
            #expect(documented, "\(key) is not documented")
        }
    }
}
