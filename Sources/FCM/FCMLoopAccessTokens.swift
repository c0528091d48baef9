import EventLoop
import FCMCore

/// The process's access tokens (`FCMAccessTokens`) as one event loop's FCM
/// client reads them. A send with a token known valid reads this loop's
/// copy of its account's snapshot: no lock, no hop. Without one, the
/// loop's sends for the account wait here, and one hop asks the owner's
/// machine for all of them; the answer comes back to this loop. FCM's
/// rejection of a token goes to the owner the same way.
/// Confined to its loop.
public final class FCMLoopAccessTokens: FCMAccessTokenSource {
    public typealias Waiter = (FCMAccessTokenResult) -> Void
    private typealias AccountKey = FCMAccessTokens.AccountKey

    public let loop: EventLoop
    /// The owner keeps its views; whoever made the owner keeps it.
    private unowned let owner: FCMAccessTokens
    private let now: @Sendable () -> Int
    /// The owner's snapshots as they last reached this loop.
    private var known: [AccountKey: FCMAccessTokenSnapshot] = [:]
    /// Sends waiting for the owner's answer, per account: one hop asked for them all.
    private var waiting: [AccountKey: [Waiter]] = [:]

    init(loop: EventLoop, owner: FCMAccessTokens, now: @escaping @Sendable () -> Int) {
        self.loop = loop
        self.owner = owner
        self.now = now
    }

    /// The token to send with now, the outcome that ends the send without
    /// one, or nil when the owner must be asked (`awaitToken`).
    public func token(for account: FCMServiceAccount) -> FCMAccessTokenResult? {
        assert(loop.isOnLoopThread, "FCMLoopAccessTokens used off its event loop")
        return known[AccountKey(account)]?.token(now: now())
    }

    /// `completion` runs on this loop with what the owner's machine gives:
    /// the token, or why there is none; at once when `token(for:)` is not nil.
    public func awaitToken(for account: FCMServiceAccount, _ completion: @escaping Waiter) {
        if let known = token(for: account) { return completion(known) }
        let key = AccountKey(account)
        if var waiters = waiting.removeValue(forKey: key) {
            waiters.append(completion)
            waiting[key] = waiters
            return
        }
        waiting[key] = [completion]
        let transfer = UnsafeTransfer((owner, self))
        owner.loop.execute { transfer.value.0.awaitToken(for: account, from: transfer.value.1) }
    }

    /// FCM refused `token`: this loop stops sending it at once (the send
    /// that got the refusal then waits for the owner's answer), and the
    /// owner's machine decides whether to fetch.
    public func rejected(token: String, for account: FCMServiceAccount) {
        assert(loop.isOnLoopThread, "FCMLoopAccessTokens used off its event loop")
        let key = AccountKey(account)
        if case .token(let known, _, _)? = known[key], known == token { self.known[key] = .unknown }
        let owner = UnsafeTransfer(owner)
        owner.value.loop.execute { owner.value.rejected(token: token, for: account) }
    }

    // MARK: From the owner

    /// The account's machine changed (nil: the account was dropped).
    func install(_ snapshot: FCMAccessTokenSnapshot?, of key: FCMAccessTokens.AccountKey) {
        known[key] = snapshot
    }

    /// The owner answered this loop's waiters for the account.
    func answered(_ result: FCMAccessTokenResult, snapshot: FCMAccessTokenSnapshot,
                  of key: FCMAccessTokens.AccountKey) {
        known[key] = snapshot
        for waiter in waiting.removeValue(forKey: key) ?? [] { waiter(result) }
    }
}
