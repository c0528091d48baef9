import APNsCore
import EventLoop
import Locking
import Observability
import Provisioning
import Redis
import RelayCore

/// pyapns' provisioned apps shared by a fleet (`REDIS_URL`): the hash
/// `FleetKeys.provisionedApps` holds every app provisioned through any
/// instance (field: the app id; value: `ProvisionedAppRecord`), so an app
/// provisioned through one instance is known to all, and again after they
/// all restart.
///
/// A provision is answered after Redis took the app, and faults when it
/// cannot: an app known to one instance only would be a success that the
/// others' notifies then deny (and that a crash loses); pyapns' client
/// provisions again on a fault. Every instance loads the hash at start-up,
/// again every `refreshInterval`, and asks for one app id it does not know
/// before it answers "not provisioned".
///
/// Every value read back is checked as a provision checks it; one that
/// fails is one log line (the id when it is a valid one, the reason, never
/// the value: it holds a private key) and is not asked for again.
public final class ProvisionedAppsSharing: SharedProvisionedApps {
    let link: RedisLink
    private let logger: Logger
    private let now: @Sendable () -> Int
    /// App ids whose value was refused: neither loaded again nor looked up
    /// (bounded by the apps' limit; past it, refusals are no longer kept).
    private let refused = Locked<Set<String>>([])
    /// The fields that are no app id, as last counted: logged when it changes.
    private let malformedFields = Locked(0)
    /// HKEYS was refused (an ACL without it): said once until it works.
    private let loadRefused = Locked(false)

    /// How often the hash is read for apps provisioned elsewhere (those
    /// looked up by topic, on the gorush and proxy paths, are found this way).
    public static let refreshInterval: Duration = .seconds(10)
    /// Values asked for per HMGET while loading (bounds one reply).
    static let batch = 50

    public init(link: RedisLink, now: @escaping @Sendable () -> Int, logger: Logger) {
        self.link = link
        self.now = now
        self.logger = logger
    }

    private static var key: [UInt8] { Array(FleetKeys.provisionedApps.utf8) }

    /// Writes a checked app to the hash unless another instance wrote its
    /// id first, then adds it here. `completion` runs on the link's thread.
    public func provision(appID: String, pem: [UInt8], environment: APNsEnvironment, into apps: ProvisionedApps,
                   completion: @escaping @Sendable (Result<ProvisionedApps.Outcome, ProvisionedApps.Refusal>) -> Void) {
        let checked: ProvisionedApps.Checked
        do { checked = try ProvisionedApps.check(appID: appID, pem: pem, now: now()) } catch {
            completion(.failure(error))
            return
        }
        guard apps.count < apps.limit else {
            completion(.failure(.init(description: "no room for another provisioned app (\(apps.limit) provisioned)")))
            return
        }
        let record = ProvisionedAppRecord(environment: environment, pem: pem)
        link.send(RedisCommand([Array("HSETNX".utf8), Self.key, Array(appID.utf8), record.encoded])) { result in
            switch result {
            case .success(.integer(1)):
                completion(Result { () throws(ProvisionedApps.Refusal) in
                    try apps.insert(appID: appID, checked, environment: environment)
                })
            case .success(.integer(0)):
                // Another instance provisioned the id first: its app is the
                // fleet's, and pyapns ignores a second provision of an id.
                // Should its value not be usable here, that is no success.
                self.lookUp(appID, into: apps) { found in
                    completion(found != nil ? .success(.alreadyKnown) : .failure(.init(description:
                        "\(appID) is provisioned in the fleet's Redis with a value this instance cannot use "
                            + "(its log says why)")))
                }
            case .success(let other):
                completion(.failure(.init(description: "the fleet's Redis answered HSETNX with \(other): "
                    + "nothing was provisioned, try again")))
            case .failure(let error):
                completion(.failure(.init(description: "the fleet's Redis did not take the app (\(error)): "
                    + "nothing was provisioned, try again")))
            }
        }
    }

    /// The app `appID` from the hash, added here; nil when the hash has no
    /// usable one or Redis does not answer. `completion` runs on the link's
    /// thread.
    public func lookUp(_ appID: String, into apps: ProvisionedApps, completion: @escaping @Sendable (RelayApp?) -> Void) {
        guard isProvisionableAppID(appID), !refused.withLock({ $0.contains(appID) }) else {
            completion(nil)
            return
        }
        link.send(RedisCommand([Array("HGET".utf8), Self.key, Array(appID.utf8)])) { result in
            guard case .success(let value) = result, let bytes = value.bytes else {
                completion(nil)
                return
            }
            completion(self.adopt(appID, bytes, into: apps))
        }
    }

    /// Reads the hash's ids and the values of those not known here, and
    /// adds them. `done` runs on the link's thread when all are handled (or
    /// Redis failed).
    public func load(into apps: ProvisionedApps, done: @escaping @Sendable () -> Void = {}) {
        link.send(RedisCommand([Array("HKEYS".utf8), Self.key])) { result in
            let refusedNow: String? = if case .failure(.serverError(let text)) = result { text } else { nil }
            let refusalChanged = self.loadRefused.withLock { refused in
                defer { refused = refusedNow != nil }
                return refused != (refusedNow != nil)
            }
            if refusalChanged {
                self.logger.warning(refusedNow.map { "fleet: Redis refuses HKEYS \(FleetKeys.provisionedApps): \($0); apps provisioned "
                    + "elsewhere are found on a notify only" } ?? "fleet: Redis takes HKEYS \(FleetKeys.provisionedApps) again")
            }
            guard case .success(let value) = result, let fields = value.array else {
                if case .success(let value) = result {
                    self.logger.warning("fleet: \(FleetKeys.provisionedApps) answered HKEYS with \(value): not a hash, skipped")
                }
                done()
                return
            }
            let refused = self.refused.withLock { $0 }
            var wanted: [String] = []
            var malformed = 0
            for field in fields {
                guard let id = field.string, isProvisionableAppID(id) else {
                    malformed += 1
                    continue
                }
                if apps.app(id: id) == nil, !refused.contains(id) { wanted.append(id) }
            }
            let changed = self.malformedFields.withLock { counted in
                defer { counted = malformed }
                return counted != malformed
            }
            if malformed > 0, changed {
                self.logger.warning("fleet: \(malformed) field(s) of \(FleetKeys.provisionedApps) are not app ids: skipped")
            }
            self.fetch(ArraySlice(wanted.prefix(max(0, apps.limit - apps.count))), into: apps, done: done)
        }
    }

    private func fetch(_ ids: ArraySlice<String>, into apps: ProvisionedApps, done: @escaping @Sendable () -> Void) {
        guard !ids.isEmpty else {
            done()
            return
        }
        let chunk = Array(ids.prefix(Self.batch))
        let rest = ids.dropFirst(Self.batch)
        link.send(RedisCommand([Array("HMGET".utf8), Self.key] + chunk.map { Array($0.utf8) })) { result in
            guard case .success(let value) = result, let values = value.array, values.count == chunk.count else {
                done()
                return
            }
            for (id, value) in zip(chunk, values) {
                if let bytes = value.bytes { _ = self.adopt(id, bytes, into: apps) }
            }
            self.fetch(rest, into: apps, done: done)
        }
    }

    /// A value read back, checked as a provision checks it, then added.
    private func adopt(_ appID: String, _ bytes: [UInt8], into apps: ProvisionedApps) -> RelayApp? {
        if let known = apps.app(id: appID) { return known }
        let record: ProvisionedAppRecord
        switch ProvisionedAppRecord.decode(bytes) {
        case .success(let decoded): record = decoded
        case .failure(let failure):
            refuse(appID, because: failure.description)
            return nil
        }
        do {
            let checked = try ProvisionedApps.check(appID: appID, pem: record.pem, now: now())
            switch try apps.insert(appID: appID, checked, environment: record.environment) {
            case .provisioned(let app): return app
            case .alreadyKnown: return apps.app(id: appID)
            }
        } catch {
            refuse(appID, because: error.description)
            return nil
        }
    }

    private func refuse(_ appID: String, because reason: String) {
        let first = refused.withLock { refused in
            guard refused.count < ProvisionedApps.defaultLimit else { return true }
            return refused.insert(appID).inserted
        }
        if first { logger.warning("fleet: provisioned app \(appID) in \(FleetKeys.provisionedApps) skipped: \(reason)") }
    }

    /// Loads the hash now and every `refreshInterval` on the link's loop,
    /// until the link closes. Returns at once.
    public func start(loading apps: ProvisionedApps) {
        link.loop.execute { self.refresh(apps) }
    }

    private func refresh(_ apps: ProvisionedApps) {
        load(into: apps) {
            _ = self.link.loop.schedule(after: Self.refreshInterval) { self.refresh(apps) }
        }
    }
}
