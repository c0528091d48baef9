import APNsCore
import Testing
@testable import AppsFile

/// `fcm-credentials` in an `[[app]]`: an app has APNs credentials, FCM's,
/// or both; `fcm` is no app's id.
@Suite("The apps file: FCM credentials")
struct FCMCredentialsTests {
    func parse(_ text: String) throws -> [AppDefinition] {
        try AppsFile.parse(text, file: "apps.toml", environment: ["FCM_FILE": "/etc/toot-relay/fb.json", "EMPTY": ""]).apps
    }

    func error(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return String(describing: error)
        }
    }

    @Test("an app with FCM credentials only has no APNs credential")
    func fcmOnly() throws {
        let apps = try parse("[[app]]\nid = \"droid\"\nfcm-credentials = \"/etc/toot-relay/droid.json\"\n")
        #expect(apps.count == 1)
        #expect(apps[0].fcmCredentials == "/etc/toot-relay/droid.json")
        #expect(apps[0].credentials.isEmpty)
        #expect(apps[0].topic == nil)
    }

    @Test("an app with both keeps its APNs credentials and takes FCM's")
    func both() throws {
        let apps = try parse(p12App("toot", "fcm-credentials = \"${FCM_FILE}\""))
        #expect(apps[0].fcmCredentials == "/etc/toot-relay/fb.json")
        #expect(apps[0].credentials[.production] == .p12File(path: "/etc/toot-relay/toot.p12", password: ""))
        #expect(apps[0].credentials[.development] != nil)
    }

    @Test("an app without fcm-credentials has no FCM")
    func apnsOnly() throws {
        #expect(try parse(p12App("toot"))[0].fcmCredentials == nil)
    }

    @Test("mistakes are one line naming the file, the app and the key", arguments: [
        (p12App("fcm"), #"apps.toml: app #1, key "id": "fcm" is reserved: it is FCM in /relay-to/fcm/<token> URLs"#),
        ("[[app]]\nid = \"fcm\"\nfcm-credentials = \"/a.json\"\n",
         #"apps.toml: app #1, key "id": "fcm" is reserved: it is FCM in /relay-to/fcm/<token> URLs"#),
        ("[[app]]\nid = \"droid\"\nfcm-credentials = \"\"\n", #"apps.toml: app "droid", key "fcm-credentials": must not be empty"#),
        ("[[app]]\nid = \"droid\"\nfcm-credentials = \"${EMPTY}\"\n", #"apps.toml: app "droid", key "fcm-credentials": must not be empty"#),
        ("[[app]]\nid = \"droid\"\nfcm-credentials = 3\n", nil),
        ("[[app]]\nid = \"droid\"\nfcm-credentials = [\"/a.json\"]\n", nil),
        // An environment without a credential is still an APNs mistake.
        ("[[app]]\nid = \"droid\"\nfcm-credentials = \"/a.json\"\nenvironments = [\"production\"]\n",
         #"apps.toml: app "droid", key "production": no credential: set p12-file, p12-base64, p8-file or p8 in the app or in [app.production]"#),
        ("[[app]]\nid = \"old\"\nretired = true\nfcm-credentials = \"/a.json\"\n",
         #"apps.toml: app "old", key "fcm-credentials": the app is retired: a retired app has an id, maybe a topic, and nothing else"#),
    ] as [(String, String?)])
    func mistakes(text: String, expected: String?) {
        let description = error(text)
        #expect(description != nil, "parsed: \(text)")
        if let expected { #expect(description == expected) }
        #expect(description?.contains("\n") != true)
    }

    @Test("hostile values are refused without trapping or echoing them")
    func hostile() {
        let long = String(repeating: "x", count: 70_000)
        for value in ["\"\(long)\"", "\"\\u0000\"", "{ a = 1 }", "1979-05-27", "true", "\"\"\"\n\"\"\""] {
            let text = "[[app]]\nid = \"droid\"\nfcm-credentials = \(value)\n"
            if let description = error(text) {
                #expect(!description.contains(long))
            }
        }
    }
}
