import Testing
import RelayCore
@testable import AppsFile

/// An `[[api-key]]`'s credentials for `/3/device/`: a backend's
/// provider-token key (`jwt-key-id`, `jwt-team-id`, `jwt-public-key`) and a
/// client certificate's fingerprint (`client-certificate-sha256`), and the
/// hostile values each refuses.
struct APIKeyProxyCredentialTests {
    static let environment = ["PUBLIC_KEY": "/etc/toot-relay/backend-public.pem"]
    static let base = [#"name = "backend""#, #"key = "backend-0123456789abcdef""#, #"apps = ["toot"]"#]
    static let jwt = [#"jwt-key-id = "ABC123DEFG""#, #"jwt-team-id = "DEF123GHIJ""#,
                      #"jwt-public-key = "${PUBLIC_KEY}""#]
    static let hex = "AB" + String(repeating: "0f", count: 31)
    static let fingerprint: [UInt8] = [0xab] + Array(repeating: 0x0f, count: 31)

    func parse(_ lines: [String]) throws(AppsFileError) -> AppsFileContents {
        try AppsFile.parse(twoApps + apiKeyEntry(Self.base + lines), file: "apps.toml", environment: Self.environment)
    }

    @Test("the provider-token key and the fingerprint are read, with or without colons")
    func read() throws {
        let entry = try #require(try parse(Self.jwt + [#"client-certificate-sha256 = "\#(Self.hex)""#]).apiKeys.first)
        #expect(entry.providerKey == APIKeyProviderKey(keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
                                                        publicKeyFile: "/etc/toot-relay/backend-public.pem"))
        #expect(entry.clientCertificateSHA256 == Self.fingerprint)
        let colons = stride(from: 0, to: 64, by: 2).map { Array(Self.hex)[$0..<$0 + 2] }.map { String($0) }
            .joined(separator: ":").lowercased()
        #expect(try parse([#"client-certificate-sha256 = "\#(colons)""#]).apiKeys.first?.clientCertificateSHA256
            == Self.fingerprint)
        let plain = try #require(try parse([]).apiKeys.first)
        #expect(plain.providerKey == nil && plain.clientCertificateSHA256 == nil)
    }

    static let prefix = "apps.toml: api-key \"backend\", key "
    static let fingerprintMessage = "must be a SHA-256 fingerprint: 64 hex digits, pairs optionally separated by \":\" "
        + "(openssl x509 -noout -fingerprint -sha256 -in client.pem)"

    static let rows: [([String], String)] = [
        // The three jwt-* keys come together.
        ([#"jwt-key-id = "ABC123DEFG""#], "\"jwt-team-id\": is required with jwt-key-id: a provider-token key needs jwt-key-id, jwt-team-id, jwt-public-key"),
        ([#"jwt-key-id = "ABC123DEFG""#, #"jwt-team-id = "DEF123GHIJ""#], "\"jwt-public-key\": is required with jwt-key-id and jwt-team-id: a provider-token key needs jwt-key-id, jwt-team-id, jwt-public-key"),
        ([#"jwt-public-key = "/k.pem""#], "\"jwt-key-id\": is required with jwt-public-key: a provider-token key needs jwt-key-id, jwt-team-id, jwt-public-key"),
        // Their syntax.
        ([#"jwt-key-id = 12"#] + jwt.dropFirst(), "\"jwt-key-id\": must be a string, not an integer"),
        ([#"jwt-key-id = "ABC 123""#] + jwt.dropFirst(), "\"jwt-key-id\": \"ABC 123\" may hold only letters, digits, \".\", \"_\" and \"-\""),
        ([#"jwt-key-id = """#] + jwt.dropFirst(), "\"jwt-key-id\": must not be empty"),
        ([#"jwt-key-id = "\#(String(repeating: "K", count: 65))""#] + jwt.dropFirst(), "\"jwt-key-id\": is 65 characters long; at most 64"),
        ([jwt[0], #"jwt-team-id = "TEAM/1""#, jwt[2]], "\"jwt-team-id\": \"TEAM/1\" may hold only letters, digits, \".\", \"_\" and \"-\""),
        ([jwt[0], jwt[1], #"jwt-public-key = """#], "\"jwt-public-key\": must not be empty"),
        ([jwt[0], jwt[1], #"jwt-public-key = ["/k.pem"]"#], "\"jwt-public-key\": must be a string, not an array"),
        ([jwt[0], jwt[1], #"jwt-public-key = "${NOPE}""#], "\"jwt-public-key\": the environment variable NOPE is not set"),
        // The fingerprint.
        ([#"client-certificate-sha256 = "abcd""#], "\"client-certificate-sha256\": " + fingerprintMessage),
        ([#"client-certificate-sha256 = "\#(String(repeating: "g", count: 64))""#], "\"client-certificate-sha256\": " + fingerprintMessage),
        ([#"client-certificate-sha256 = "\#(hex)00""#], "\"client-certificate-sha256\": " + fingerprintMessage),
        ([#"client-certificate-sha256 = "\#(String(repeating: "ab-", count: 31) + "ab")""#], "\"client-certificate-sha256\": " + fingerprintMessage),
        ([#"client-certificate-sha256 = "\#(String(repeating: "ab:", count: 30) + "abab")""#], "\"client-certificate-sha256\": " + fingerprintMessage),
        ([#"client-certificate-sha256 = 7"#], "\"client-certificate-sha256\": must be a string, not an integer"),
        ([#"client-certificate-sha256 = "\#(String(repeating: "é", count: 32))""#], "\"client-certificate-sha256\": " + fingerprintMessage),
    ]

    @Test("a bad provider-token key or fingerprint is one line naming the entry and the key", arguments: rows)
    func errors(lines: [String], expected: String) {
        do {
            _ = try parse(lines)
            Issue.record("parsed")
        } catch {
            #expect(error.description == Self.prefix + expected)
        }
    }

    @Test("two entries may not share a jwt-key-id or a client certificate")
    func unique() {
        let second = [#"name = "other""#, #"key = "other-0123456789abcdef""#, #"apps = ["feditext"]"#]
        for (lines, key) in [(Self.jwt, "jwt-key-id"), ([#"client-certificate-sha256 = "\#(Self.hex)""#], "client-certificate-sha256")] {
            let text = twoApps + apiKeyEntry(Self.base + lines) + apiKeyEntry(second + lines)
            do {
                _ = try AppsFile.parse(text, file: "apps.toml", environment: Self.environment)
                Issue.record("parsed")
            } catch {
                #expect(error.description.hasPrefix("apps.toml: api-key \"other\", key \"\(key)\": "), "\(error)")
                #expect(error.description.contains("of api-key \"backend\" too"), "\(error)")
            }
        }
    }
}
