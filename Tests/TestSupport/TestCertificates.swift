import Foundation

/// Throwaway certificates and keys made by `scripts/make-test-certs`, generated
/// once per test process into a private temporary directory.
public enum TestCertificates {
    // File names written by the script (see its header for what each one is).
    public static let caCertificate = "ca.pem"
    public static let caKey = "ca.key"
    public static let serverCertificate = "server.pem"
    public static let serverKey = "server.key"
    public static let serverChain = "server-chain.pem"
    public static let clientCertificate = "client.pem"
    public static let clientKey = "client.key"
    public static let clientP12 = "client.p12"
    public static let clientP12WithoutPassword = "client-nopass.p12"
    public static let clientP12Legacy = "client-legacy.p12"
    public static let clientP12CertificateOnly = "client-certonly.p12"
    public static let expiredClientCertificate = "expired-client.pem"
    public static let expiredClientKey = "expired-client.key"
    public static let expiredClientP12 = "expired-client.p12"
    public static let futureClientCertificate = "future-client.pem"
    public static let futureClientKey = "future-client.key"
    public static let futureClientP12 = "future-client.p12"
    public static let otherCACertificate = "other-ca.pem"
    public static let otherCAKey = "other-ca.key"
    public static let otherServerCertificate = "other-server.pem"
    public static let otherServerKey = "other-server.key"
    public static let otherClientCertificate = "other-client.pem"
    public static let otherClientKey = "other-client.key"
    public static let authKeyP8 = "authkey.p8"
    public static let authKeyPublic = "authkey-public.pem"
    public static let p384KeyP8 = "p384.p8"
    public static let serviceAccountKeyP8 = "service-account.p8"
    public static let serviceAccountKeyPKCS1 = "service-account-rsa.pem"
    public static let serviceAccountPublicKey = "service-account-public.pem"
    public static let rsa1024KeyP8 = "rsa1024.p8"
    public static let notAP12 = "not-a-p12.p12"

    /// Password of every password-protected p12 the script writes.
    public static let p12Password = "secret"
    /// Bundle id carried in the client certificates' subject UID.
    public static let bundleID = "com.example.tootrelay.test"
    /// Validity of the expired client certificate (unix seconds).
    public static let expiredNotBefore = 1_577_836_800  // 2020-01-01T00:00:00Z
    public static let expiredNotAfter = 1_609_459_200  // 2021-01-01T00:00:00Z
    /// Start of validity of the not-yet-valid client certificate.
    public static let futureNotBefore = 4_070_908_800  // 2099-01-01T00:00:00Z

    /// The directory holding the generated files. The script runs at most once
    /// per process (a Swift `static let` is initialised exactly once, under a lock).
    public static func directory() throws -> String {
        try generated.get()
    }

    /// Absolute path of one generated file.
    public static func path(_ name: String) throws -> String {
        try directory() + "/" + name
    }

    /// The bytes of one generated file.
    public static func bytes(_ name: String) throws -> [UInt8] {
        let path = try path(name)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TestCertificatesError(message: "cannot read \(path)")
        }
        return [UInt8](data)
    }

    private static let generated: Result<String, TestCertificatesError> = generate()

    /// Private to this process: concurrent test processes must not mix files.
    private static let plannedDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("toot-relay-test-certs-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        .path

    private static func generate() -> Result<String, TestCertificatesError> {
        let script = scriptPath()
        let directory = plannedDirectory
        // Throwaway keys do not outlive the test process.
        atexit { try? FileManager.default.removeItem(atPath: TestCertificates.plannedDirectory) }
        do {
            let result = try Subprocess.run(["/bin/bash", script, directory])
            guard result.status == 0 else {
                return .failure(TestCertificatesError(
                    message: "\(script) exited with \(result.status): \(result.standardErrorText)"))
            }
        } catch {
            return .failure(TestCertificatesError(message: "cannot run \(script): \(error)"))
        }
        return .success(directory)
    }

    /// `scripts/make-test-certs`, found from this source file's location
    /// (Sources/TestSupport/ → repository root).
    private static func scriptPath() -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("scripts/make-test-certs")
            .path
    }
}

public struct TestCertificatesError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}
