import Locking
import Synchronization

/// The FCM side of the emulator, shared by the loop threads: the trusted
/// accounts, the access tokens issued, counters and records.
final class FCMEmulatorState: Sendable {
    let configuration: FCMEmulatorConfiguration
    let accounts: [FCMTrustedAccount]
    /// The token endpoints' paths (the accounts' `token_uri` targets).
    let tokenPaths: Set<String>
    let issuedTokens = FCMIssuedTokens()

    let tokenRequests = Atomic<Int>(0)
    let tokensIssued = Atomic<Int>(0)
    let tokenRefusals = Atomic<Int>(0)
    let received = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let unanswered = Atomic<Int>(0)

    /// Registration tokens already answered 401 by `unauthenticatedOnce`.
    let refusedOnce = Locked<Set<String>>([])
    let records = Locked<[FCMReceivedMessage]>([])
    /// In a struct, for the reason `EmulatorState.observer` gives.
    let observer = Locked(Observer())
    let hasObserver = Atomic<Bool>(false)

    struct Observer {
        var call: (@Sendable (FCMReceivedMessage) -> Void)?
    }

    init(configuration: FCMEmulatorConfiguration) throws(APNsEmulatorError) {
        guard configuration.tokenLifetime >= 1 else {
            throw .invalidConfiguration("the FCM access-token lifetime must be at least 1 second")
        }
        var accounts: [FCMTrustedAccount] = []
        for account in configuration.serviceAccounts {
            guard !accounts.contains(where: { $0.account.privateKeyID == account.privateKeyID }) else {
                throw .invalidConfiguration("two service accounts have the key id \(account.privateKeyID)")
            }
            accounts.append(try FCMTrustedAccount(account))
        }
        self.configuration = configuration
        self.accounts = accounts
        tokenPaths = Set(accounts.map { $0.account.tokenEndpoint.target })
    }

    /// Whether a request for `path` is FCM's (the token endpoint or the
    /// v1 API) rather than APNs's.
    func serves(path: String) -> Bool {
        path.hasPrefix("/v1/") || tokenPaths.contains(path)
    }

    var statistics: FCMEmulatorStatistics {
        FCMEmulatorStatistics(
            tokenRequests: tokenRequests.load(ordering: .relaxed), tokensIssued: tokensIssued.load(ordering: .relaxed),
            tokenRefusals: tokenRefusals.load(ordering: .relaxed), received: received.load(ordering: .relaxed),
            accepted: accepted.load(ordering: .relaxed), rejected: rejected.load(ordering: .relaxed),
            unanswered: unanswered.load(ordering: .relaxed))
    }

    /// Zeroes the counters and forgets the records, the tokens issued and
    /// the tokens already refused once.
    func reset() {
        tokenRequests.store(0, ordering: .relaxed)
        tokensIssued.store(0, ordering: .relaxed)
        tokenRefusals.store(0, ordering: .relaxed)
        received.store(0, ordering: .relaxed)
        accepted.store(0, ordering: .relaxed)
        rejected.store(0, ordering: .relaxed)
        unanswered.store(0, ordering: .relaxed)
        issuedTokens.removeAll()
        refusedOnce.withLock { $0.removeAll() }
        records.withLock { $0.removeAll() }
    }
}

/// The FCM side's counters since start (or the last `reset()`).
public struct FCMEmulatorStatistics: Sendable, Hashable {
    /// Requests to the token endpoint (every outcome).
    public var tokenRequests: Int
    /// Access tokens issued (200s of the token endpoint).
    public var tokensIssued: Int
    /// Token requests refused (an OAuth error).
    public var tokenRefusals: Int
    /// Complete `messages:send` requests (every outcome).
    public var received: Int
    /// Messages answered 200.
    public var accepted: Int
    /// Messages answered with an error (validation, bearer, fault token).
    public var rejected: Int
    /// Messages deliberately left unanswered (fault token).
    public var unanswered: Int
}
