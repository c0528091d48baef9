import FCMCore

/// Where an instance of a fleet takes the access token another instance
/// fetched, instead of fetching its own (the Fleet module's, over Redis).
/// The FCM module knows nothing of Redis: the account's machine asks this
/// whenever it would fetch.
public protocol FCMAccessTokenSharing: AnyObject, Sendable {
    /// The account's token is wanted at `now`; `replacing` is the token the
    /// process had (expired or rejected by FCM: not to be taken again).
    /// Either the fleet's token comes back (`TokenFetchResult.shared`), or
    /// `fetch` is called, at most once, and what it brought comes back.
    /// `completion` runs exactly once, on any thread; so may `fetch`.
    func obtain(_ account: FCMServiceAccount, replacing: String?, now: Int,
                fetch: @escaping @Sendable (@escaping @Sendable (TokenFetchResult) -> Void) -> Void,
                completion: @escaping @Sendable (TokenFetchResult) -> Void)
}
