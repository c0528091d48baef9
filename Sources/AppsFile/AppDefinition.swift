import APNsCore
import RelayCore

/// One `[[app]]` of the apps file (ARCHITECTURE.md §7 "The apps
/// file"), validated, its `${NAME}` references expanded, its credentials not
/// yet loaded (the relay loads each `CredentialSpec` when it starts or
/// reloads). Holds secrets inside `credentials`: log `CredentialSpec.source`,
/// never the value.
public struct AppDefinition: Sendable, Equatable {
    /// The app's name in URLs (`/relay-to/<id>/…`, `/push/<id>/…`).
    public var id: String
    /// `apns-topic`; nil: the certificate's UID (the relay resolves it when
    /// it loads the credential).
    public var topic: String?
    /// The app's own `aps.alert` (`alert` or `alert-loc-key`); nil: each
    /// payload dialect's default (`APNsAlert.tootRelayDefault`, `.metatextDefault`).
    public var alert: APNsAlert?
    /// `default = true`: the app of the URLs without an app part when the
    /// environment variables configure no credential.
    public var isDefault: Bool
    /// `restricted-only = true`: an endpoint of this app without
    /// `?vapid=` answers 403.
    public var restrictedOnly: Bool
    /// Only the enabled environments (`environments`, default both), each
    /// with its credential after the `[app.<env>]` overrides; none for a
    /// retired app.
    public var credentials: [APNsEnvironment: CredentialSpec]
    /// `retired = true`: the operator took the app out of service; its URLs
    /// answer 410, so senders delete its subscriptions. Such an app has an
    /// id, maybe a topic, and nothing else.
    public var isRetired: Bool
    /// `fcm-credentials`: the path of the app's Firebase service-account
    /// file, read and checked when the relay loads the app; nil: no FCM.
    /// An app has APNs credentials (`credentials`), FCM's, or both.
    public var fcmCredentials: String?

    public init(id: String, topic: String? = nil, alert: APNsAlert? = nil, isDefault: Bool = false,
                restrictedOnly: Bool = false, credentials: [APNsEnvironment: CredentialSpec], isRetired: Bool = false,
                fcmCredentials: String? = nil) {
        self.id = id
        self.topic = topic
        self.alert = alert
        self.isDefault = isDefault
        self.restrictedOnly = restrictedOnly
        self.credentials = credentials
        self.isRetired = isRetired
        self.fcmCredentials = fcmCredentials
    }
}
