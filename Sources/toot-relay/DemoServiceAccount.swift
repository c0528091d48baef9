import Daemon
import Foundation

/// The demo's throwaway Firebase service account: the RSA key that
/// scripts/make-test-certs made beside the throwaway CA
/// (`service-account.p8`), in a JSON file shaped as the Firebase console
/// writes one. The emulator's token endpoint trusts it and the relay sends
/// as it; its `token_uri` names the emulator, because the emulator checks an
/// assertion's `aud` against it (RFC 7523 §3) and the relay fetches its
/// access tokens there.
enum DemoServiceAccount {
    static let fileName = "fcm-service-account.json"
    static let projectID = "toot-relay-demo"
    static let clientEmail = "firebase-adminsdk-demo@toot-relay-demo.iam.gserviceaccount.com"
    static let privateKeyID = String(repeating: "de", count: 20)

    /// Writes the file into `directory` for a token endpoint on
    /// 127.0.0.1:`port` and returns its path. Owner-only, as a real
    /// service account's key should be.
    static func write(in directory: String, tokenEndpointPort port: UInt16) throws(StartupFailure) -> String {
        let keyPath = directory + "/service-account.p8"
        guard let key = try? String(contentsOfFile: keyPath, encoding: .utf8) else {
            throw StartupFailure("demo: no \(keyPath) (scripts/make-test-certs makes it)")
        }
        let account: [String: String] = [
            "type": "service_account",
            "project_id": projectID,
            "private_key_id": privateKeyID,
            "private_key": key,
            "client_email": clientEmail,
            "token_uri": "https://127.0.0.1:\(port)/token",
        ]
        let path = directory + "/" + fileName
        guard let json = try? JSONSerialization.data(withJSONObject: account,
                                                     options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]),
              FileManager.default.createFile(atPath: path, contents: json, attributes: [.posixPermissions: 0o600])
        else {
            throw StartupFailure("demo: cannot write \(path)")
        }
        return path
    }
}
