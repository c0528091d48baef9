import EventLoop
import FCMCore
import Glibc

/// The access tokens of every service account sent with on one event loop:
/// one `FCMAccountAccessToken` per account, keyed by `client_email` and
/// `private_key_id` (a new key is a new account: its tokens are its own).
/// Confined to the loop: every call, and every fetch's completion, on it.
public final class FCMAccessTokens {
    /// What every account's token needs from outside.
    struct Environment {
        let loop: EventLoop
        let fetch: TokenFetch
        /// Unix seconds: the assertion's `iat` is read by the endpoint's clock.
        let now: () -> Int
        let log: (String) -> Void
    }

    private struct AccountKey: Hashable {
        let clientEmail: String
        let privateKeyID: String
    }

    private let environment: Environment
    private var accounts: [AccountKey: FCMAccountAccessToken] = [:]

    /// `fetch` posts token requests (the HTTPS client's); `now` is the wall
    /// clock in unix seconds; `log` gets one line per fetch, nothing secret.
    public init(loop: EventLoop, fetch: @escaping TokenFetch, now: @escaping () -> Int = { Int(time(nil)) },
                log: @escaping (String) -> Void = { _ in }) {
        environment = Environment(loop: loop, fetch: fetch, now: now, log: log)
    }

    /// The account's token, made at the first ask. A client may keep it (per
    /// app) to skip the lookup on every send.
    public func account(_ account: FCMServiceAccount) -> FCMAccountAccessToken {
        let key = AccountKey(clientEmail: account.clientEmail, privateKeyID: account.privateKeyID)
        if let existing = accounts[key] { return existing }
        let made = FCMAccountAccessToken(account: account, environment: environment)
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

    /// Drops the accounts not among `kept` (after a reload); a fetch under
    /// way for a dropped one still ends for its waiters.
    public func keepOnly(_ kept: [FCMServiceAccount]) {
        let keys = Set(kept.map { AccountKey(clientEmail: $0.clientEmail, privateKeyID: $0.privateKeyID) })
        accounts = accounts.filter { keys.contains($0.key) }
    }

    /// How many accounts have a token or had one asked for (tests, metrics).
    public var accountCount: Int { accounts.count }
}
