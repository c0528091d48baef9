import APNsCore
import RelayCore

/// The provisioned apps several instances share (with REDIS_URL, the
/// fleet's hash in Redis: `ProvisionedAppsSharing`), as pyapns' calls see
/// them, so that what provisions and notifies need not know Redis.
public protocol SharedProvisionedApps: Sendable {
    /// Adds a checked app to the shared apps unless another instance added
    /// its id first, then to `apps`; a failure to reach the shared apps is
    /// a refusal (nothing provisioned). `completion` runs on another
    /// thread, once.
    func provision(appID: String, pem: [UInt8], environment: APNsEnvironment, into apps: ProvisionedApps,
                   completion: @escaping @Sendable (Result<ProvisionedApps.Outcome, ProvisionedApps.Refusal>) -> Void)

    /// The app `appID` from the shared apps, added to `apps`; nil when they
    /// hold no usable one or cannot be asked. `completion` runs on another
    /// thread, once.
    func lookUp(_ appID: String, into apps: ProvisionedApps, completion: @escaping @Sendable (RelayApp?) -> Void)
}
