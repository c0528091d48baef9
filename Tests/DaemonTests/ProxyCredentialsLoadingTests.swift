import APNsCore
import ProviderAPI
import RelayCore
import TestSupport
import Testing

@testable import Daemon

/// What `/3/device/` authenticates with, loaded with the apps: the relay's
/// token keys (the apps of their team), its certificates (their apps), and
/// the `[[api-key]]` entries' own keys and fingerprints, whose public key
/// file is read and checked here.
@Suite("Loading the proxy's credentials")
struct ProxyCredentialsLoadingTests {
    /// `APIKeysLoadingTests`' file (the certificate app `toot`) with two
    /// apps on one token key, and the `[[api-key]]` lines given.
    static func file(_ apiKeys: String = "") throws -> String {
        try APIKeysLoadingTests.file(["feditext", "beta"].map { id in
            "[[app]]\nid = \"\(id)\"\ntopic = \"com.example.\(id)\"\np8-file = \"\(try p8())\"\n"
                + "key-id = \"ABC123DEFG\"\nteam-id = \"TEAM123456\"\n\n"
        }.joined() + apiKeys)
    }

    static func entry(_ lines: String...) -> String {
        "[[api-key]]\nname = \"backend\"\nkey = \"backend-0123456789abcdef\"\napps = [\"toot\"]\n"
            + lines.joined(separator: "\n") + "\n"
    }

    @Test("a token key is its team's apps; a certificate the apps it is the certificate of")
    func fromTheApps() throws {
        let credentials = try load(file: try Self.file()).proxyCredentials
        #expect(credentials.tokenKeys.map(\.keyID) == ["ABC123DEFG"])
        #expect(credentials.tokenKeys.first?.apps == .only(["feditext", "beta"]))
        #expect(credentials.tokenKeys.first?.teamID == "TEAM123456")
        // The fingerprint itself is TLS's (PresentedCredentialTests).
        #expect(credentials.certificates.map(\.apps) == [.only(["toot"])])
        #expect(credentials.certificates.first?.sha256.count == 32)
    }

    @Test("an [[api-key]] entry's own key and certificate are that entry's apps")
    func fromAnAPIKey() throws {
        let fingerprint = String(repeating: "ab", count: 32)
        let credentials = try load(file: try Self.file(Self.entry(
            #"jwt-key-id = "BACKEND001""#, #"jwt-team-id = "BACKTEAM01""#,
            #"jwt-public-key = "\#(try TestCertificates.path(TestCertificates.authKeyPublic))""#,
            #"client-certificate-sha256 = "\#(fingerprint)""#))).proxyCredentials
        let key = try #require(credentials.tokenKeys.first { $0.keyID == "BACKEND001" })
        #expect(key.name == "backend" && key.teamID == "BACKTEAM01" && key.apps == .only(["toot"]))
        #expect(credentials.certificates.first?.name == "backend")
        #expect(credentials.certificates.first?.sha256 == Array(repeating: 0xab, count: 32))
    }

    @Test("a jwt-public-key that cannot be read or is not a P-256 public key, or an app's key id, stops the load",
          arguments: ["/nonexistent/backend-public.pem", "CLIENT", "P8"])
    func refused(file: String) throws {
        var keyID = "BACKEND001"
        var path = file
        switch file {
        case "CLIENT": path = try TestCertificates.path(TestCertificates.clientCertificate)
        case "P8": path = try TestCertificates.path(TestCertificates.authKeyPublic); keyID = "ABC123DEFG"
        default: break
        }
        let text = try Self.file(Self.entry(#"jwt-key-id = "\#(keyID)""#, #"jwt-team-id = "BACKTEAM01""#,
                                            #"jwt-public-key = "\#(path)""#))
        #expect {
            try load(file: text)
        } throws: { error in
            let message = (error as? AppsLoadError)?.description ?? ""
            return message.hasPrefix("api-key \"backend\": jwt-") && !message.contains("backend-0123456789abcdef")
        }
    }
}
