// Which app a request is for: the app reference a URL gives
// (Routing.swift) resolved against the apps the relay serves: the app the
// environment variables describe (the default app, id "default") and the
// apps of the apps file (ARCHITECTURE.md §7).

import APNsCore
import FCMCore

/// What APNs last said about one app's credentials, shared by every loop:
/// a 403 marks them rejected, a 2xx clears that (WIRE.md §1.4). Per
/// app, so one app's expired certificate does not fail the others' health.
///
/// A protocol here, its one implementation (Delivery's `AppHealth`, an
/// atomic flag) with the deliveries that record it: state written and read by
/// every loop's thread needs Synchronization, which a pure core may not
/// import. An app holds it as a class-bound existential, a reference and a
/// witness table in the `RelayApp` value: no allocation per request, one
/// indirect call per read.
public protocol CredentialHealth: AnyObject, Sendable {
    var credentialsRejected: Bool { get }

    /// What an outcome said of the credentials (`DeliveryOutcome.credentialVerdict`,
    /// the one place that decides it; an expired certificate is `.rejected`
    /// too); nil, an outcome that says nothing of them, changes nothing.
    func record(_ verdict: CredentialVerdict?)
}

/// An app's FCM credentials, loaded: the service account its messages go
/// out with, and what FCM last said of it (its own health: one service's
/// rejection says nothing of the other's credentials). A class: an app is
/// copied out of `RelayApps` on every request, APNs' too, and one reference
/// costs that copy one retain, where the account's strings and key cost
/// one each.
public final class FCMAppCredentials: Sendable {
    public let account: FCMServiceAccount
    /// Kept across a reload for an app whose id stays.
    public let health: any CredentialHealth

    public init(account: FCMServiceAccount, health: any CredentialHealth) {
        (self.account, self.health) = (account, health)
    }
}

/// One app the relay sends notifications for.
public struct RelayApp: Sendable, Equatable {
    /// The id the app file gave the app, or the name of the default app.
    public static let defaultID = "default"

    /// The app's name in URLs (`/relay-to/<id>/…`, `/push/<id>/…`), log
    /// lines and metrics.
    public var id: String
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    /// The app's own `aps.alert`; nil for each dialect's default.
    public var alert: APNsAlert?
    /// The credential of each environment; nil: the environment is
    /// disabled for this app (a push to it is 404).
    public var production: CredentialID?
    public var development: CredentialID?
    /// Only restricted endpoints (`?vapid=`, RFC 8292 §4) are served: an
    /// unrestricted one answers 403.
    public var restrictedOnly: Bool
    /// Kept across a reload for an app whose id stays.
    public var health: any CredentialHealth
    /// The token key's id per environment, for a token credential: a log
    /// line about a rejected credential names it (never the key).
    public var keyIDs: [APNsEnvironment: String] = [:]
    /// The app's FCM credentials; nil: its FCM URLs (`/relay-to/<id>/fcm/…`)
    /// answer as an environment without a credential does.
    public var fcm: FCMAppCredentials?

    public init(id: String = RelayApp.defaultID, topic: String, alert: APNsAlert? = nil,
                production: CredentialID? = .primary, development: CredentialID? = .primary,
                restrictedOnly: Bool = false, health: any CredentialHealth) {
        self.id = id
        self.topic = topic
        self.alert = alert
        self.production = production
        self.development = development
        self.restrictedOnly = restrictedOnly
        self.health = health
    }

    public func credential(for environment: APNsEnvironment) -> CredentialID? {
        environment == .production ? production : development
    }

    public static func == (a: RelayApp, b: RelayApp) -> Bool {
        a.id == b.id && a.topic == b.topic && a.alert == b.alert && a.production == b.production
            && a.development == b.development && a.restrictedOnly == b.restrictedOnly && a.health === b.health
            && a.keyIDs == b.keyIDs && a.fcm?.account == b.fcm?.account && a.fcm?.health === b.fcm?.health
    }

    /// Whether the app has APNs credentials at all (an app may have FCM's only).
    public var servesAPNs: Bool { production != nil || development != nil }

    /// Whether every push service the app has rejects its credentials.
    public var credentialsRejected: Bool {
        if let fcm, !fcm.health.credentialsRejected { return false }
        return !servesAPNs && fcm != nil || health.credentialsRejected
    }
}

/// An app the operator retired on purpose (`retired = true` in the apps
/// file): its URLs answer 410, so the servers that push to them delete their
/// subscriptions. An id the relay does not know at all is the relay's
/// mistake, never a dead subscription (503).
public struct RetiredApp: Sendable, Equatable {
    public var id: String
    /// Mona's `/push/<bundle-id>/…` names an app by its topic.
    public var topic: String?

    public init(id: String, topic: String? = nil) {
        self.id = id
        self.topic = topic
    }
}

/// The apps the relay serves: a value, swapped whole on every loop by a
/// reload.
public struct RelayApps: Sendable, Equatable {
    /// Every app, the default one included, in the file's order.
    public private(set) var all: [RelayApp]
    /// The app of the URLs without an app part; nil when there is none
    /// (those URLs then answer 503, `WebPushHandler.noApp`).
    public private(set) var defaultApp: RelayApp?
    /// Index into `all` by id.
    private var byID: [String: Int]
    /// Index into `all` by topic.
    private var byTopic: [String: Int]
    /// The retired apps' ids, and their topics.
    private var retiredIDs: Set<String>, retiredTopics: Set<String>

    /// `apps` and `retired` have unique ids and topics (the loader
    /// checked); `defaultAppID` names one of `apps`, or nil for none.
    public init(_ apps: [RelayApp], defaultAppID: String?, retired: [RetiredApp] = []) {
        all = apps
        byID = [:]
        byTopic = [:]
        retiredIDs = Set(retired.map(\.id))
        retiredTopics = Set(retired.compactMap(\.topic))
        for (index, app) in apps.enumerated() {
            precondition(byID.updateValue(index, forKey: app.id) == nil, "app id \(app.id) given twice")
            // An app with FCM credentials only may have no topic.
            if !app.topic.isEmpty { byTopic[app.topic] = byTopic[app.topic] ?? index }
        }
        defaultApp = defaultAppID.flatMap { byID[$0] }.map { apps[$0] }
        precondition((defaultAppID == nil) == (defaultApp == nil), "default app \(defaultAppID ?? "") is not an app")
    }

    /// One app, the default.
    public init(defaultApp: RelayApp?) {
        self.init(defaultApp.map { [$0] } ?? [], defaultAppID: defaultApp?.id)
    }

    /// The app `reference` names, nil for none (404): a URL without an app
    /// part names the default app; `/relay-to/<app>/…` an app's id;
    /// `/push/<app-or-topic>/…` an app's id or, as Mona's fork has it, an
    /// app's topic.
    public func app(for reference: AppReference) -> RelayApp? {
        switch reference {
        case .defaultApp:
            return defaultApp
        case .id(let id):
            return byID[id].map { all[$0] }
        case .idOrTopic(let name):
            return (byID[name] ?? byTopic[name]).map { all[$0] }
        }
    }

    /// Whether `reference` names an app the operator retired (a URL without
    /// an app part never does).
    public func isRetired(_ reference: AppReference) -> Bool {
        switch reference {
        case .defaultApp: false
        case .id(let id): retiredIDs.contains(id)
        case .idOrTopic(let name): retiredIDs.contains(name) || retiredTopics.contains(name)
        }
    }

    /// The app whose topic is `topic` (the provider API picks apps by
    /// `apns-topic` and gorush's `topic`), nil for none.
    public func app(topic: String) -> RelayApp? {
        byTopic[topic].map { all[$0] }
    }

    /// The health check's verdict: true only when every app's credentials
    /// are rejected (one app's expired certificate must not take the others
    /// out of a load balancer); false with no app.
    public var allCredentialsRejected: Bool {
        !all.isEmpty && all.allSatisfy { $0.credentialsRejected }
    }
}
