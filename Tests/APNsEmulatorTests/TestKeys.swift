import APNsCore
@testable import APNsEmulator
import Base64URL
import Foundation
import Glibc
import TLS
import TestSupport

/// Several provider keys and client certificates from two CAs (for
/// several apps, teams and scoped keys), made with the `openssl` CLI once per
/// test process into TestCertificates' private directory, so `TestClient`
/// and `Curl` find them by name like the script's files.
enum TestKeys {
    /// A provider key the tests sign with: its p8 (private) and public PEM file names.
    struct Key: Sendable {
        var keyID: String
        var teamID: String
        var privateFile: String
        var publicFile: String
        var environments: Set<APNsEnvironment> = [.production, .development]
        var topics: Set<String>?

        func configured() throws -> APNsEmulatorProviderKey {
            APNsEmulatorProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: try TestKeys.bytes(publicFile),
                                    environments: environments, topics: topics)
        }

        /// A provider token signed with this key; the claims and the key that
        /// signs can be overridden to make refusals.
        func token(keyID: String? = nil, teamID: String? = nil, issuedAt: Int = Int(time(nil)),
                   signedWith: Key? = nil, corruptSignature: Bool = false) throws -> String {
            let header = base64URLEncode(Array(#"{"alg":"ES256","kid":"\#(keyID ?? self.keyID)"}"#.utf8))
            let claims = base64URLEncode(Array(#"{"iss":"\#(teamID ?? self.teamID)","iat":\#(issuedAt)}"#.utf8))
            _ = try TestKeys.directory()
            let signer = try ES256Signer(pkcs8File: TestCertificates.path((signedWith ?? self).privateFile))
            var signature = try signer.sign(Array("\(header).\(claims)".utf8))
            if corruptSignature { signature[10] ^= 0x55 }
            return "\(header).\(claims).\(base64URLEncode(signature))"
        }
    }

    /// The script's key: a team key valid in both environments.
    static let team = Key(keyID: Fixture.keyID, teamID: Fixture.teamID, privateFile: TestCertificates.authKeyP8,
                          publicFile: TestCertificates.authKeyPublic)
    /// Another team's key, scoped to production.
    static let otherTeam = Key(keyID: "OTHERTEAMK", teamID: "TEAMB00002", privateFile: "other-team.p8",
                               publicFile: "other-team-public.pem", environments: [.production])
    /// The first team's key scoped to the sandbox.
    static let sandbox = Key(keyID: "SANDBOX123", teamID: Fixture.teamID, privateFile: "sandbox.p8",
                             publicFile: "sandbox-public.pem", environments: [.development])
    /// A topic-specific key covering the second app only.
    static let topicKey = Key(keyID: "TOPICKEY01", teamID: Fixture.teamID, privateFile: "topic.p8",
                              publicFile: "topic-public.pem", topics: [secondTopic])

    /// The second app: its client certificate (UID = this topic) is issued by
    /// the script's other CA.
    static let secondTopic = "com.example.second"
    static let secondClientCertificate = "second-client.pem"
    static let secondClientKey = "second-client.key"
    /// The script's CA and its other CA in one PEM file.
    static let twoCAs = "two-cas.pem"
    /// A client certificate for the first app's topic issued by a third CA,
    /// in no --client-ca file: a stranger whatever its UID says.
    static let strangerClientCertificate = "stranger-client.pem"
    static let strangerClientKey = "stranger-client.key"
    /// Public keys that are not P-256 and a file that is no PEM at all.
    static let p384Public = "p384-public.pem"
    static let ed25519Public = "ed25519-public.pem"
    static let notAKey = "not-a-key.pem"

    static func path(_ name: String) throws -> String {
        _ = try directory()
        return try TestCertificates.path(name)
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        _ = try directory()
        return try TestCertificates.bytes(name)
    }

    /// Every provider key above, as the emulator is configured with them.
    static func allKeys() throws -> [APNsEmulatorProviderKey] {
        try [team, otherTeam, sandbox, topicKey].map { try $0.configured() }
    }

    static func directory() throws -> String { try generated.get() }

    private static let generated: Result<String, TestCertificatesError> = generate()

    private static func generate() -> Result<String, TestCertificatesError> {
        let script = """
            set -euo pipefail
            cd "$1"
            for name in other-team sandbox topic; do
                openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.p8" 2>/dev/null
                openssl pkey -in "$name.p8" -pubout -out "$name-public.pem"
            done
            openssl pkey -in p384.p8 -pubout -out p384-public.pem
            openssl genpkey -algorithm ED25519 -out ed25519.key
            openssl pkey -in ed25519.key -pubout -out ed25519-public.pem
            printf 'not a key\\n' >not-a-key.pem
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out second-client.key 2>/dev/null
            openssl req -new -key second-client.key -out second-client.csr \\
                -subj "/UID=\(secondTopic)/CN=Apple Push Services: \(secondTopic)/O=Second App Tests"
            printf 'basicConstraints=critical,CA:FALSE\\nkeyUsage=critical,digitalSignature\\nextendedKeyUsage=clientAuth\\n' \\
                >second-client.ext
            openssl x509 -req -in second-client.csr -CA other-ca.pem -CAkey other-ca.key \\
                -set_serial "0x$(openssl rand -hex 8)" -days 30 -sha256 -extfile second-client.ext \\
                -out second-client.pem 2>/dev/null
            cat ca.pem other-ca.pem >two-cas.pem
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out stranger-ca.key 2>/dev/null
            openssl req -new -x509 -key stranger-ca.key -out stranger-ca.pem -days 30 -sha256 \
                -subj "/O=Stranger Tests/CN=Stranger Test CA" \
                -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out stranger-client.key 2>/dev/null
            openssl req -new -key stranger-client.key -out stranger-client.csr \
                -subj "/UID=\(Fixture.topic)/CN=Apple Push Services: \(Fixture.topic)/O=Stranger Tests"
            openssl x509 -req -in stranger-client.csr -CA stranger-ca.pem -CAkey stranger-ca.key \
                -set_serial "0x$(openssl rand -hex 8)" -days 30 -sha256 -extfile second-client.ext \
                -out stranger-client.pem 2>/dev/null
            """
        do {
            let directory = try TestCertificates.directory()
            let result = try Subprocess.run(["/bin/bash", "-c", script, "make-test-keys", directory])
            guard result.status == 0 else {
                return .failure(TestCertificatesError(message: "making test keys failed: \(result.standardErrorText)"))
            }
            return .success(directory)
        } catch let error as TestCertificatesError {
            return .failure(error)
        } catch {
            return .failure(TestCertificatesError(message: "cannot make test keys: \(error)"))
        }
    }
}
