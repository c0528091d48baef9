import APNsCore
import RelayCore
import Testing

@Suite("Configuration: FCM")
struct ConfigurationFCMTests {
    @Test("without FCM variables there is no FCM credential, and the client's settings are APNs' defaults")
    func defaults() throws {
        let configuration = try Configuration(environment: [:])
        #expect(configuration.fcmCredentialsFile == nil)
        #expect(configuration.fcmCredentialsBase64 == nil)
        #expect(configuration.fcmHost == HostAndPort(host: "fcm.googleapis.com", port: 443))
        #expect(configuration.fcmMaxConnections == APNsSettings().maxConnectionsPerEnvironment)
        #expect(configuration.fcmAnswerTimeout == APNsSettings().answerTimeout)
    }

    @Test("the variables land in their fields")
    func values() throws {
        let configuration = try Configuration(environment: [
            "FCM_CREDENTIALS_FILE": "/etc/toot-relay/firebase.json", "FCM_HOST": "[::1]:8443",
            "FCM_TIMEOUT": "2.5", "FCM_MAX_CONNECTIONS": "7",
        ])
        #expect(configuration.fcmCredentialsFile == "/etc/toot-relay/firebase.json")
        #expect(configuration.fcmHost == HostAndPort(host: "::1", port: 8443))
        #expect(configuration.fcmAnswerTimeout == .milliseconds(2500))
        #expect(configuration.fcmMaxConnections == 7)
        let base64 = try Configuration(environment: ["FCM_CREDENTIALS_BASE64": "eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0="])
        #expect(base64.fcmCredentialsBase64 == "eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0=")
        #expect(base64.fcmCredentialsFile == nil)
    }

    @Test("FCM_HOST is read as APNS_*_HOST are: a host alone takes 443")
    func hostAlone() throws {
        let configuration = try Configuration(environment: ["FCM_HOST": "fcm.example.test"])
        #expect(configuration.fcmHost == HostAndPort(host: "fcm.example.test", port: 443))
    }

    @Test("both credential variables are one clear error, whichever comes by flag")
    func bothCredentials() throws {
        #expect {
            try Configuration(environment: ["FCM_CREDENTIALS_FILE": "a.json", "FCM_CREDENTIALS_BASE64": "e30="])
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.variable == "FCM_CREDENTIALS_BASE64" && error?.message.contains("FCM_CREDENTIALS_FILE") == true
        }
        var configuration = try Configuration(environment: ["FCM_CREDENTIALS_BASE64": "e30="])
        #expect(throws: ConfigurationError.self) { try configuration.apply(["FCM_CREDENTIALS_FILE": "a.json"]) }
    }

    @Test("empty values count as unset")
    func emptyIsUnset() throws {
        let configuration = try Configuration(environment: [
            "FCM_CREDENTIALS_FILE": "", "FCM_CREDENTIALS_BASE64": "", "FCM_HOST": "", "FCM_TIMEOUT": "",
        ])
        #expect(configuration == Configuration.defaults)
    }

    @Test("hostile values are refused with the variable named", arguments: [
        ("FCM_HOST", "host:port"), ("FCM_HOST", "[::1"), ("FCM_HOST", "a b"), ("FCM_HOST", "host:99999"),
        ("FCM_HOST", "host:-1"), ("FCM_HOST", "https://fcm.googleapis.com"),
        ("FCM_HOST", String(repeating: "a", count: 300) + ":"),
        ("FCM_TIMEOUT", "0"), ("FCM_TIMEOUT", "-1"), ("FCM_TIMEOUT", "nan"), ("FCM_TIMEOUT", "inf"),
        ("FCM_TIMEOUT", "86401"), ("FCM_TIMEOUT", "1e400"), ("FCM_TIMEOUT", "8s"),
        ("FCM_MAX_CONNECTIONS", "0"), ("FCM_MAX_CONNECTIONS", "1001"), ("FCM_MAX_CONNECTIONS", "-4"),
        ("FCM_MAX_CONNECTIONS", "4.5"), ("FCM_MAX_CONNECTIONS", "99999999999999999999999"),
        ("FCM_MAX_CONNECTIONS", " 4"),
    ])
    func refusesBadValue(name: String, value: String) {
        #expect {
            try Configuration(environment: [name: value])
        } throws: { error in
            (error as? ConfigurationError)?.variable == name
        }
    }

    @Test("credential paths and base64 are taken as given: the daemon reads and checks them")
    func credentialsAsGiven() throws {
        let odd = "../a file with spaces/ünïcode.json"
        #expect(try Configuration(environment: ["FCM_CREDENTIALS_FILE": odd]).fcmCredentialsFile == odd)
    }
}
