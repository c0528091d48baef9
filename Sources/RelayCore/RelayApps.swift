// Which app a request is for (issue #12): the app reference a URL gives
// (Routing.swift) resolved against the apps the relay serves. Today that is
// the default app, configured by the environment (ARCHITECTURE.md §4).

/// One app the relay sends notifications for.
public struct RelayApp: Sendable, Equatable {
    /// The app's name in URLs; nil for the app the environment configures,
    /// which has none.
    public var id: String?
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    /// The app's own `aps.alert`; nil for each dialect's default.
    public var alert: APNsAlert?

    public init(id: String? = nil, topic: String, alert: APNsAlert? = nil) {
        self.id = id
        self.topic = topic
        self.alert = alert
    }
}

/// The apps the relay serves.
public struct RelayApps: Sendable, Equatable {
    /// The app of the URLs without an app part; nil when there is none
    /// (those URLs then answer 404).
    public var defaultApp: RelayApp?

    public init(defaultApp: RelayApp?) {
        self.defaultApp = defaultApp
    }

    /// The app `reference` names, nil for none (404): a URL without an app
    /// part names the default app; a name is an app's id or, as Mona's
    /// `/push/<bundle-id>/…` has it, an app's topic.
    public func app(for reference: AppReference) -> RelayApp? {
        switch reference {
        case .defaultApp:
            return defaultApp
        case .named(let name):
            guard let defaultApp else { return nil }
            return defaultApp.id == name || defaultApp.topic == name ? defaultApp : nil
        }
    }
}
