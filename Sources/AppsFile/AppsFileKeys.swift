import APNsCore
import RelayCore

// The keys an apps file may hold (each documented in
// config/apps.example.toml): the one list the reader checks names against.

enum AppsFileKeys {
    /// The keys at the top level: the arrays of `[[app]]` and
    /// `[[api-key]]` tables (the provider API's keys).
    static let app = "app"
    static let apiKey = "api-key"
    static let topLevel: Set = [app, apiKey]

    /// An `[[api-key]]`'s keys: its name (logs, metrics), the key, its apps;
    /// and the other credentials `/3/device/` takes for its apps: a backend's
    /// provider-token key (its id, team and public key file) and a client
    /// certificate's SHA-256 fingerprint.
    static let keyName = "name", keyValue = "key", keyApps = "apps"
    static let jwtKeyID = "jwt-key-id", jwtTeamID = "jwt-team-id", jwtPublicKey = "jwt-public-key"
    static let clientCertificateSHA256 = "client-certificate-sha256"
    static let jwtKeys = [jwtKeyID, jwtTeamID, jwtPublicKey]
    static let inAPIKey: Set = Set([keyName, keyValue, keyApps, clientCertificateSHA256] + jwtKeys)
    /// `apps = ["*"]`: every app, provisioned ones included.
    static let everyApp = "*"

    /// An app's own keys, credentials aside.
    static let id = "id", topic = "topic", environments = "environments", isDefault = "default"
    static let alert = "alert", alertLocKey = "alert-loc-key"
    /// Only restricted (VAPID) endpoints of this app are served.
    static let restrictedOnly = "restricted-only"
    /// The app is out of service: its URLs answer 410.
    static let retired = "retired"
    /// The path of the app's Firebase service-account JSON file: its FCM
    /// URLs (`/relay-to/<id>/fcm/<token>`) deliver through FCM.
    static let fcmCredentials = "fcm-credentials"
    /// What a retired app may hold besides `retired`.
    static let inRetiredApp: Set = [id, topic, retired]

    /// Each is an app's `[app.<environment>]` table too.
    static let environmentNames = [APNsEnvironment.production, .development].map(\.rawValue)

    /// The credential keys: allowed in an app and in its environment tables.
    static let credential = CredentialKeys.allNames

    /// Everything an app's table may hold.
    static let inApp = Set([id, topic, environments, alert, alertLocKey, isDefault, restrictedOnly, retired, fcmCredentials]
        + credential + environmentNames)

    /// Key names a TOML syntax message may quote: none is a value.
    static let shown = inApp.union(topLevel).union(inAPIKey)
}

/// The credential keys, by role.
enum CredentialKeys {
    static let p12File = "p12-file", p12Base64 = "p12-base64", p12Password = "p12-password"
    static let p8File = "p8-file", p8 = "p8", keyID = "key-id", teamID = "team-id"

    /// Where a credential comes from: exactly one per environment. The
    /// order is the one errors name them in.
    static let sources = [p12File, p12Base64, p8File, p8]
    static let allNames = sources + [p12Password, keyID, teamID]

    /// Keys whose values no error message, log line or `check-config` line
    /// may show: secrets never appear in logs.
    static let secrets: Set<String> = [p12Password, p12Base64, p8]
}
