import EventLoop
import FCMCore
import Glibc

/// The access tokens of every service account the process sends with: one
/// `FCMAccountAccessToken` per account, keyed by `client_email` and
/// `private_key_id` (a new key is a new account: its tokens are its own),
/// all on one event loop, the owner's. So one fetch at a time per account
/// serves every loop: each loop reads what the account's machine knows
/// from its own `FCMLoopAccessTokens` (`view(on:)`), which the owner keeps
/// current by a hop to that loop whenever the machine's snapshot changes,
/// and only a loop with no valid token hops here to wait.
/// Confined to its loop: every call, and every fetch's completion, on it.
public final class FCMAccessTokens {
    /// What every account's token needs from outside.
    struct Environment {
        let loop: EventLoop
        let fetch: TokenFetch
        /// Unix seconds: the assertion's `iat` is read by the endpoint's clock.
        let now: () -> Int
        let log: (String) -> Void
        /// With a fleet: its shared token, taken instead of fetching.
        let sharing: (any FCMAccessTokenSharing)?
    }

    struct AccountKey: Hashable {
        let clientEmail: String
        let privateKeyID: String

        init(_ account: FCMServiceAccount) {
            clientEmail = account.clientEmail
            privateKeyID = account.privateKeyID
        }
    }

    public var loop: EventLoop { environment.loop }
    private let environment: Environment
    private var accounts: [AccountKey: FCMAccountAccessToken] = [:]
    /// One per loop served (`view(on:)`), made with the owner, then fixed.
    private var views: [FCMLoopAccessTokens] = []

    /// `fetch` posts token requests (the HTTPS client's, on `loop`); `now`
    /// is the wall clock in unix seconds; `log` gets one line per fetch,
    /// nothing secret. `servedLoops` get a view each (`view(on:)`);
    /// `sharing` is the fleet's token, when there is a fleet.
    public init(loop: EventLoop, fetch: @escaping TokenFetch, now: @escaping @Sendable () -> Int = { Int(time(nil)) },
                log: @escaping (String) -> Void = { _ in }, servedLoops: [EventLoop] = [],
                sharing: (any FCMAccessTokenSharing)? = nil) {
        environment = Environment(loop: loop, fetch: fetch, now: now, log: log, sharing: sharing)
        views = servedLoops.map { FCMLoopAccessTokens(loop: $0, owner: self, now: now) }
    }

    /// The tokens as `loop` (one of `servedLoops`) reads them; used on that loop only.
    public func view(on loop: EventLoop) -> FCMLoopAccessTokens {
        guard let view = views.first(where: { $0.loop === loop }) else {
            preconditionFailure("FCMAccessTokens: a loop it does not serve")
        }
        return view
    }

    /// The account's token, made at the first ask.
    public func account(_ account: FCMServiceAccount) -> FCMAccountAccessToken {
        let key = AccountKey(account)
        if let existing = accounts[key] { return existing }
        let made = FCMAccountAccessToken(account: account, environment: environment) { [weak self] snapshot in
            self?.publish(snapshot, of: key)
        }
        accounts[key] = made
        return made
    }

    /// `account(account).token()`: the token to send with now, the failure
    /// that holds, or nil when a fetch must be awaited.
    public func token(for account: FCMServiceAccount) -> FCMAccessTokenResult? {
        self.account(account).token()
    }

    /// `account(account).awaitToken(completion)`.
    public func awaitToken(for account: FCMServiceAccount, _ completion: @escaping (FCMAccessTokenResult) -> Void) {
        self.account(account).awaitToken(completion)
    }

    /// `account(account).rejected(token:)`.
    public func rejected(token: String, for account: FCMServiceAccount) {
        self.account(account).rejected(token: token)
    }

    /// Drops the accounts not among `kept` (after a reload), here and in
    /// every loop's view; a fetch under way for a dropped one still ends
    /// for its waiters.
    public func keepOnly(_ kept: [FCMServiceAccount]) {
        let keys = Set(kept.map(AccountKey.init))
        for key in accounts.keys where !keys.contains(key) { publish(nil, of: key) }
        accounts = accounts.filter { keys.contains($0.key) }
    }

    /// How many accounts have a token or had one asked for (tests, metrics).
    public var accountCount: Int { accounts.count }

    /// Every view learns the account's snapshot (nil: dropped), in the
    /// order the machine made them: hops from one loop to another run in
    /// the order they were sent.
    private func publish(_ snapshot: FCMAccessTokenSnapshot?, of key: AccountKey) {
        for view in views {
            let transfer = UnsafeTransfer((view, key))
            view.loop.execute { transfer.value.0.install(snapshot, of: transfer.value.1) }
        }
    }

    /// A view's loop has no valid token for `account`: its waiters are
    /// answered on their own loop with the result and the snapshot then.
    func awaitToken(for account: FCMServiceAccount, from view: FCMLoopAccessTokens) {
        let made = self.account(account)
        let key = AccountKey(account)
        made.awaitToken { result in
            let transfer = UnsafeTransfer((view, made.snapshot))
            view.loop.execute { transfer.value.0.answered(result, snapshot: transfer.value.1, of: key) }
        }
    }
}
