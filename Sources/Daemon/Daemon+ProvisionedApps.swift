import APNs
import Fleet
import Glibc
import Observability
import Provisioning
import Relay

extension Daemon {
    /// pyapns' provisioned apps: in memory alone; with a fleet, shared
    /// through Redis and loaded from it in the background (the listeners
    /// never wait for it).
    func makeProvisionedApps(_ catalog: APNsCredentialCatalog, fleet: Fleet?, logger: Logger) -> ProvisionedApps {
        guard let fleet else { return ProvisionedApps(catalog: catalog) }
        let sharing = ProvisionedAppsSharing(link: fleet.commands, now: { Int(Glibc.time(nil)) }, logger: logger)
        let apps = ProvisionedApps(catalog: catalog, sharing: sharing)
        sharing.start(loading: apps)
        return apps
    }
}
