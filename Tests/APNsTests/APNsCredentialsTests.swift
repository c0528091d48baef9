import Foundation
import RelayCore
import Testing
import TestSupport
import TLS
@testable import APNs

@Suite("APNs credentials")
struct APNsCredentialsTests {
    /// A time inside the client certificates' validity: read after they
    /// exist (they are valid from the second they were made).
    static var now: Int {
        _ = try? TestCertificates.directory()
        return Int(Date().timeIntervalSince1970)
    }

    static func configuration(_ variables: [String: String]) throws -> Configuration {
        try Configuration(environment: variables)
    }

    /// The credential the variables select and the topic it implies, as the
    /// relay derives them (`AppsLoader`: `loadCredential`, `effectiveTopic`).
    static func load(_ configuration: Configuration) throws(APNsStartupError) -> (credential: LoadedCredential, topic: String) {
        let credential = try loadCredential(configuration.credentialSpec, now: now)
        return (credential, configuration.effectiveTopic(certificateUID: credential.certificateUID))
    }

    static func identity(_ credential: LoadedCredential) -> TLSIdentity? {
        if case .certificate(let identity) = credential.authentication { return identity }
        return nil
    }

    static func tokenProvider(_ credential: LoadedCredential) -> APNsTokenProvider? {
        if case .token(let provider) = credential.authentication { return provider }
        return nil
    }

    @Test("modern, legacy and password-less p12 files load; the topic comes from the certificate UID", arguments: [
        (TestCertificates.clientP12, TestCertificates.p12Password),
        (TestCertificates.clientP12Legacy, TestCertificates.p12Password),
        (TestCertificates.clientP12WithoutPassword, ""),
    ])
    func loadsP12(file: String, password: String) throws {
        let configuration = try Self.configuration([
            "P12_FILENAME": try TestCertificates.path(file), "P12_PASSWORD": password,
        ])
        let (credential, topic) = try Self.load(configuration)
        #expect(topic == TestCertificates.bundleID)
        // From the certificate UID: no TOPIC is set.
        #expect(configuration.topic == nil)
        #expect(credential.certificateUID == TestCertificates.bundleID)
        #expect(Self.identity(credential)?.subjectUID == TestCertificates.bundleID)
        #expect(Self.tokenProvider(credential) == nil)
        #expect(credential.summary.contains("certificate auth"))
        #expect(credential.summary.contains("expires 20"))
        #expect(!credential.summary.contains(password.isEmpty ? "\u{0}" : password))
    }

    @Test("TOPIC overrides the certificate UID")
    func topicOverride() throws {
        let configuration = try Self.configuration([
            "P12_FILENAME": try TestCertificates.path(TestCertificates.clientP12), "P12_PASSWORD": "secret",
            "TOPIC": "org.example.other",
        ])
        let (credential, topic) = try Self.load(configuration)
        #expect(topic == "org.example.other")
        #expect(credential.certificateUID == TestCertificates.bundleID, "the certificate names another topic")
    }

    @Test("P12_BASE64 wins over P12_FILENAME, wrapped or not")
    func base64WinsOverFile() throws {
        let bytes = try TestCertificates.bytes(TestCertificates.clientP12)
        let plain = Data(bytes).base64EncodedString()
        let wrapped = Data(bytes).base64EncodedString(options: [.lineLength76Characters])
        for text in [plain, wrapped] {
            let configuration = try Self.configuration([
                "P12_BASE64": text, "P12_PASSWORD": "secret", "P12_FILENAME": "/nonexistent/file.p12",
            ])
            let (credential, topic) = try Self.load(configuration)
            #expect(topic == TestCertificates.bundleID)
            #expect(Self.identity(credential) != nil)
        }
    }

    @Test("token auth wins over certificates; the topic is TOPIC or the default")
    func tokenWins() throws {
        let key = try TestCertificates.path(TestCertificates.authKeyP8)
        var variables = [
            "TOKEN_AUTH_KEY_FILENAME": key, "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "TEAM123456",
            "P12_FILENAME": try TestCertificates.path(TestCertificates.clientP12), "P12_PASSWORD": "secret",
        ]
        var (credential, topic) = try Self.load(Self.configuration(variables))
        #expect(Self.identity(credential) == nil)
        #expect(Self.tokenProvider(credential)?.keyID == "ABC123DEFG")
        #expect(credential.certificateUID == nil)
        #expect(topic == Configuration.defaultTopic)
        #expect(topic == "cx.c3.toot")
        #expect(credential.summary == "token auth (key id ABC123DEFG, team TEAM123456)")
        variables["TOPIC"] = "org.example.app"
        (credential, topic) = try Self.load(Self.configuration(variables))
        #expect(topic == "org.example.app")
    }

    /// Each failure gets its own one-line message naming the variable.
    @Test("bad certificates fail with their own clear line", arguments: [
        (TestCertificates.clientP12, "wrong", "P12_FILENAME (", "wrong password for the PKCS#12 file"),
        (TestCertificates.clientP12Legacy, "wrong", "P12_FILENAME (", "wrong password for the PKCS#12 file"),
        (TestCertificates.clientP12CertificateOnly, "secret", "P12_FILENAME (", "no private key found"),
        (TestCertificates.expiredClientP12, "secret", "P12_FILENAME (", "certificate expired on 2021-01-01T00:00:00Z"),
        (TestCertificates.notAP12, "secret", "P12_FILENAME (", "not a PKCS#12 (.p12) file"),
    ])
    func badCertificates(file: String, password: String, prefix: String, message: String) throws {
        let configuration = try Self.configuration(["P12_FILENAME": try TestCertificates.path(file), "P12_PASSWORD": password])
        let error = try #require(throws: APNsStartupError.self) { try Self.load(configuration) }
        #expect(error.description.hasPrefix(prefix))
        #expect(error.description.contains(message))
        #expect(!error.description.contains("\n"))
    }

    @Test("an unreadable p12 file names the file and the reason")
    func unreadableFile() throws {
        let configuration = try Self.configuration(["P12_FILENAME": "/nonexistent/toot-relay.p12"])
        let error = try #require(throws: APNsStartupError.self) { try Self.load(configuration) }
        #expect(error.description == "P12_FILENAME (/nonexistent/toot-relay.p12): cannot read /nonexistent/toot-relay.p12: No such file or directory")
    }

    @Test("P12_BASE64 that is not base64 is named as such", arguments: ["not base64 at all!", "QUJD=A", "A"])
    func badBase64(text: String) throws {
        let configuration = try Self.configuration(["P12_BASE64": text])
        let error = try #require(throws: APNsStartupError.self) { try Self.load(configuration) }
        #expect(error.description.hasPrefix("P12_BASE64: not valid base64: "))
    }

    @Test("P12_BASE64 holding base64 of something else is not a p12")
    func base64OfGarbage() throws {
        let configuration = try Self.configuration(["P12_BASE64": "aGVsbG8gd29ybGQ="])
        let error = try #require(throws: APNsStartupError.self) { try Self.load(configuration) }
        #expect(error.description.hasPrefix("P12_BASE64: not a PKCS#12 (.p12) file"))
    }

    @Test("token key problems name TOKEN_AUTH_KEY_FILENAME", arguments: [
        ("/nonexistent/AuthKey.p8", "cannot read /nonexistent/AuthKey.p8"),
        (TestCertificates.p384KeyP8, "unsupported key"),
        (TestCertificates.clientCertificate, "no private key found"),
    ])
    func badTokenKey(file: String, message: String) throws {
        let path = file.hasPrefix("/") ? file : try TestCertificates.path(file)
        let configuration = try Self.configuration([
            "TOKEN_AUTH_KEY_FILENAME": path, "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "TEAM123456",
        ])
        let error = try #require(throws: APNsStartupError.self) { try Self.load(configuration) }
        #expect(error.description.hasPrefix("TOKEN_AUTH_KEY_FILENAME (\(path)): "))
        #expect(error.description.contains(message), "\(error)")
    }

    @Test("a key id or team id that would break the JWT is refused", arguments: [
        ("TOKEN_KEY_ID", "ABC\"123"), ("TOKEN_TEAM_ID", "TEAM 1"), ("TOKEN_KEY_ID", String(repeating: "A", count: 65)),
    ])
    func badTokenFields(variable: String, value: String) throws {
        var variables = [
            "TOKEN_AUTH_KEY_FILENAME": try TestCertificates.path(TestCertificates.authKeyP8),
            "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "TEAM123456",
        ]
        variables[variable] = value
        let error = try #require(throws: APNsStartupError.self) { try Self.load(Self.configuration(variables)) }
        #expect(error.description.hasPrefix(variable + ": "))
    }

    /// The daemon makes each credential's context at startup through the
    /// catalog and reports a failure as `APNsStartupError.tls`.
    @Test("CA_FILENAME that cannot be read fails the TLS setup with one line")
    func badCAFile() throws {
        let (credential, _) = try Self.load(Self.configuration([
            "P12_FILENAME": try TestCertificates.path(TestCertificates.clientP12), "P12_PASSWORD": "secret",
        ]))
        func context(caFile: String?) throws(TLSError) -> APNsEndpointCredential? {
            let catalog = APNsCredentialCatalog(caFile: caFile)
            catalog.add(.primary, credential.authentication)
            return try catalog.endpointCredential(.primary)
        }
        let tlsError = try #require(throws: TLSError.self) { try context(caFile: "/nonexistent/ca.pem") }
        let error = APNsStartupError.tls(tlsError)
        #expect(error.description.hasPrefix("APNs TLS setup"))
        #expect(!error.description.contains("\n"))
        #expect(try context(caFile: TestCertificates.path(TestCertificates.caCertificate)) != nil)
        #expect(try context(caFile: nil) != nil)
    }

    @Test("dates for log lines", arguments: [
        (0, "1970-01-01"), (951_782_400, "2000-02-29"), (1_609_459_199, "2020-12-31"), (4_070_908_800, "2099-01-01"),
    ])
    func dates(seconds: Int, text: String) {
        #expect(certificateDayText(seconds) == text)
    }
}
