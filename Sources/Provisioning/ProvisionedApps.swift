import APNs
import APNsCore
import Delivery

import Locking
import RelayCore
import TLS

/// The apps pyapns' `provision` call adds at run time: each an
/// app id, one environment and a certificate given as PEM text. Alone, an
/// instance keeps them in memory only, as pyapns keeps them (a restart
/// forgets them; the apps file is the place for apps that must stay); in a
/// fleet (`sharing`) they are kept in Redis too, and every instance learns
/// them. A reload of the apps file keeps them. Shared by every loop of the
/// API listener.
public final class ProvisionedApps: Sendable {
    /// Why a certificate could not be provisioned (a pyapns fault's text).
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    public enum Outcome: Equatable, Sendable {
        case provisioned(RelayApp)
        /// The id was known already: ignored, as pyapns ignores it.
        case alreadyKnown
    }

    private struct State {
        var apps: [String: RelayApp] = [:]
        /// Provisioned credentials count down from -1, so they never meet
        /// the apps loader's ids (0 and up).
        var nextCredential = -1
    }

    private let state = Locked(State())
    private let catalog: APNsCredentialCatalog
    /// Bounds the memory a caller can make the relay hold (a TLS identity
    /// and, once used, a pool per app).
    public let limit: Int

    /// With a fleet: where the apps are shared.
    public let sharing: (any SharedProvisionedApps)?

    public init(catalog: APNsCredentialCatalog, limit: Int = ProvisionedApps.defaultLimit,
                sharing: (any SharedProvisionedApps)? = nil) {
        self.catalog = catalog
        self.limit = limit
        self.sharing = sharing
    }

    public static let defaultLimit = 1_000

    public func app(id: String) -> RelayApp? {
        state.withLock { $0.apps[id] }
    }

    /// The provisioned app whose topic is `topic` (the gorush and proxy
    /// paths choose apps by topic).
    public func app(topic: String) -> RelayApp? {
        state.withLock { state in state.apps.values.first { $0.topic == topic } }
    }

    /// Whether `id` is one of the provisioned credentials (a reload must
    /// not retire them).
    public func holds(_ id: CredentialID) -> Bool {
        state.withLock { state in state.apps.values.contains { $0.production == id || $0.development == id } }
    }

    public var count: Int { state.withLock { $0.apps.count } }

    /// Provisions `appID` for `environment` with the certificate and key in
    /// `pem` (one text holding both, as pyapns takes it). `configured`: the
    /// apps of the apps file; an id among them counts as known. The
    /// certificate's UID is the app's topic, as APNs takes it from the
    /// certificate when a request names none.
    public func provision(appID: String, pem: [UInt8], environment: APNsEnvironment, configured: RelayApps,
                          now: Int) throws(Refusal) -> Outcome {
        if configured.app(for: .id(appID)) != nil || app(id: appID) != nil { return .alreadyKnown }
        let checked = try Self.check(appID: appID, pem: pem, now: now)
        return try insert(appID: appID, checked, environment: environment)
    }

    /// A certificate that passed `check`: its identity and topic.
    public struct Checked: Sendable {
        let identity: TLSIdentity
        let topic: String
    }

    /// The checks `provision` makes of a PEM before it is used: a
    /// certificate and key that load, valid now, whose subject names a topic.
    public static func check(appID: String, pem: [UInt8], now: Int) throws(Refusal) -> Checked {
        let identity: TLSIdentity
        do {
            identity = try TLSIdentity.pem(certificate: pem, privateKey: pem)
            try identity.validate(now: now)
        } catch {
            throw Refusal(description: "the certificate for \(appID) cannot be used: \(error)")
        }
        guard let topic = identity.subjectUID, !topic.isEmpty else {
            throw Refusal(description: "the certificate for \(appID) names no topic (its subject has no UID)")
        }
        return Checked(identity: identity, topic: topic)
    }

    /// Adds a checked app, unless the id is held already or the limit is
    /// reached.
    public func insert(appID: String, _ checked: Checked, environment: APNsEnvironment) throws(Refusal) -> Outcome {
        try state.withLock { state throws(Refusal) -> Outcome in
            if state.apps[appID] != nil { return .alreadyKnown }
            guard state.apps.count < limit else {
                throw Refusal(description: "no room for another provisioned app (\(limit) provisioned)")
            }
            let credential = CredentialID(state.nextCredential)
            state.nextCredential -= 1
            catalog.add(credential, .certificate(checked.identity))
            let app = RelayApp(id: appID, topic: checked.topic,
                               production: environment == .production ? credential : nil,
                               development: environment == .development ? credential : nil)
            state.apps[appID] = app
            return .provisioned(app)
        }
    }
}

/// pyapns took any string; here an id also names the app in log lines and
/// metrics labels, so it keeps to the characters those take as they are.
public func isProvisionableAppID(_ id: String) -> Bool {
    (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}
