import APNsCore
import Locking
import TLS

/// How one credential's connections authenticate: the TLS context (with the
/// client certificate for certificate auth) and, for token auth, the token
/// provider shared by every connection of every loop (one JWT per key per
/// process).
public struct APNsEndpointCredential: Sendable {
    public var tlsContext: TLSContext
    public var tokenProvider: APNsTokenProvider?

    public init(tlsContext: TLSContext, tokenProvider: APNsTokenProvider? = nil) {
        self.tlsContext = tlsContext
        self.tokenProvider = tokenProvider
    }
}

/// The credentials the relay holds, by id, shared by every loop's client.
///
/// A TLS context is made when a credential's first connection opens, not
/// when it is loaded: a configured app without traffic costs its loaded
/// certificate and key only (the budget: 100 idle apps within 5 MiB). Every
/// token credential shares one context (no client certificate). A reload
/// adds the new credentials before the loops route to them and removes the
/// retired ones after (`APNsClient` then closes their pools once idle).
public final class APNsCredentialCatalog: Sendable {
    private enum Entry {
        case ready(APNsEndpointCredential)
        case certificate(TLSIdentity)
        case token(APNsTokenProvider)
    }

    private struct State {
        var entries: [CredentialID: Entry] = [:]
        var tokenContext: TLSContext?
    }

    /// PEM roots trusted for APNs; nil: the system store.
    private let caFile: String?
    private let state = Locked(State())

    public init(caFile: String?) {
        self.caFile = caFile
    }

    /// One credential with its context made (a relay with one app, tests).
    public convenience init(primary: APNsEndpointCredential) {
        self.init(caFile: nil)
        state.withLock { $0.entries[.primary] = .ready(primary) }
    }

    public func add(_ id: CredentialID, _ authentication: APNsAuthentication) {
        let entry: Entry
        switch authentication {
        case .certificate(let identity): entry = .certificate(identity)
        case .token(let provider): entry = .token(provider)
        }
        state.withLock { $0.entries[id] = entry }
    }

    public func remove(_ id: CredentialID) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    public func contains(_ id: CredentialID) -> Bool {
        state.withLock { $0.entries[id] != nil }
    }

    /// Every token credential's provider, each once (a fleet keeps their
    /// tokens shared).
    public var tokenProviders: [APNsTokenProvider] {
        state.withLock { state in
            var seen = Set<ObjectIdentifier>()
            var providers: [APNsTokenProvider] = []
            for id in state.entries.keys.sorted() {
                let provider: APNsTokenProvider?
                switch state.entries[id] {
                case .token(let token): provider = token
                case .ready(let ready): provider = ready.tokenProvider
                case .certificate, nil: provider = nil
                }
                if let provider, seen.insert(ObjectIdentifier(provider)).inserted { providers.append(provider) }
            }
            return providers
        }
    }

    public var ids: [CredentialID] {
        state.withLock { $0.entries.keys.sorted() }
    }

    /// The credential's connection settings, its TLS context made now if it
    /// has none yet; nil for an id the catalog does not hold.
    public func endpointCredential(_ id: CredentialID) throws(TLSError) -> APNsEndpointCredential? {
        let result: Result<APNsEndpointCredential?, TLSError> = state.withLock { state in
            guard let entry = state.entries[id] else { return .success(nil) }
            do throws(TLSError) {
                let credential: APNsEndpointCredential
                switch entry {
                case .ready(let ready):
                    return .success(ready)
                case .certificate(let identity):
                    credential = APNsEndpointCredential(
                        tlsContext: try TLSContext.client(trustedRootsFile: caFile, identity: identity, alpn: ["h2"]))
                case .token(let provider):
                    let context: TLSContext
                    if let shared = state.tokenContext {
                        context = shared
                    } else {
                        context = try TLSContext.client(trustedRootsFile: caFile, identity: nil, alpn: ["h2"])
                        state.tokenContext = context
                    }
                    credential = APNsEndpointCredential(tlsContext: context, tokenProvider: provider)
                }
                state.entries[id] = .ready(credential)
                return .success(credential)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
