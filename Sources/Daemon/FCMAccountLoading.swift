import AppsFile
import FCMCore
import Foundation
import RelayCore

// The apps' Firebase service accounts, read and checked with FCMCore's
// `FCMServiceAccount` when the relay starts, on SIGHUP and by
// check-config: a broken file is one line naming where it was named (the
// variable, or the apps file, app and key), the file and the field; never
// the key (FCMServiceAccountError quotes none).

extension AppsLoader {
    /// The default app's service account: `FCM_CREDENTIALS_FILE` or
    /// `FCM_CREDENTIALS_BASE64`, nil when neither is set.
    static func defaultFCMAccount(_ configuration: Configuration, readFile: (String) -> [UInt8]?)
        throws(AppsLoadError) -> (account: FCMServiceAccount, source: String)? {
        if let path = configuration.fcmCredentialsFile {
            let account = try fcmAccount(at: path, readFile: readFile) { "FCM_CREDENTIALS_FILE (\(path)): \($0)" }
            return (account, path)
        }
        guard let base64 = configuration.fcmCredentialsBase64 else { return nil }
        // Foundation's decoder takes the standard alphabet with padding, as
        // `base64 -w0` writes it; whitespace a shell kept is dropped first.
        let compact = base64.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: compact) else {
            throw AppsLoadError("FCM_CREDENTIALS_BASE64: not base64 (RFC 4648 §4) of a service account's JSON file")
        }
        do { return (try FCMServiceAccount(json: [UInt8](data)), "FCM_CREDENTIALS_BASE64") } catch {
            throw AppsLoadError("FCM_CREDENTIALS_BASE64: the decoded file \(error)")
        }
    }

    /// The service account of the file an app's `fcm-credentials` names.
    static func appFCMAccount(_ path: String, appsFile: String, app: String, readFile: (String) -> [UInt8]?)
        throws(AppsLoadError) -> FCMServiceAccount {
        try fcmAccount(at: path, readFile: readFile) {
            AppsFileError(file: appsFile, app: app, key: "fcm-credentials", message: "\(path): \($0)").description
        }
    }

    /// The file at `path`, read (at most one byte over the limit, so a huge
    /// file is refused without reading it all) and checked; `line` places
    /// the problem.
    private static func fcmAccount(at path: String, readFile: (String) -> [UInt8]?,
                                   line: (String) -> String) throws(AppsLoadError) -> FCMServiceAccount {
        guard let bytes = readFile(path) else { throw AppsLoadError(line("cannot be read")) }
        do { return try FCMServiceAccount(json: bytes) } catch {
            throw AppsLoadError(line("the file \(error)"))
        }
    }

    /// Reads at most `FCMServiceAccount.maxFileBytes + 1` bytes of a file.
    static func readServiceAccountFile(_ path: String) -> [UInt8]? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: FCMServiceAccount.maxFileBytes + 1) else { return nil }
        return [UInt8](data ?? Data())
    }

    /// `app droid fcm: service account … (key …, project …) from <source>,
    /// via /relay-to/droid/fcm/<token>`: what check-config, the start-up log
    /// and a reload show of an app's FCM credentials (never the key).
    static func fcmSummary(app: String, account: FCMServiceAccount, source: String, isDefault: Bool) -> String {
        var urls: [String] = []
        if isDefault { urls.append("/relay-to/fcm/<token>") }
        urls.append("/relay-to/\(app)/fcm/<token>")
        return "app \(app) fcm\(isDefault ? " (default app)" : ""): service account \(account) from \(source), "
            + "via \(urls.joined(separator: ", "))"
    }
}
