// What APNs last said about each app's credentials, as the deliveries
// record it (DeliveryPath.swift) and the health check and metrics read it:
// run-time state shared by every loop's thread, so it lives here and not
// in RelayCore, whose `RelayApp` holds it as a `CredentialHealth`.

import APNsCore
import RelayCore
import Synchronization

/// One app's `CredentialHealth`: an atomic flag, read and written by every
/// loop without a lock (relaxed: each verdict stands alone, and nothing
/// else is published with it).
public final class AppHealth: CredentialHealth {
    private let rejected = Atomic<Bool>(false)

    public init() {}

    public var credentialsRejected: Bool { rejected.load(ordering: .relaxed) }

    public func record(_ verdict: CredentialVerdict?) {
        switch verdict {
        case .rejected: rejected.store(true, ordering: .relaxed)
        case .accepted: rejected.store(false, ordering: .relaxed)
        case nil: break
        }
    }
}

extension RelayApp {
    /// An app with a health of its own, or `health`, an app's that a
    /// reload keeps: how the relay and its tests make apps.
    public init(id: String = RelayApp.defaultID, topic: String, alert: APNsAlert? = nil,
                production: CredentialID? = .primary, development: CredentialID? = .primary,
                restrictedOnly: Bool = false, health: AppHealth = AppHealth()) {
        self.init(id: id, topic: topic, alert: alert, production: production, development: development,
                  restrictedOnly: restrictedOnly, health: health as any CredentialHealth)
    }
}
