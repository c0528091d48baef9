import EventLoop
import FCMCore
import TLS

/// One service account's access token on the owner's event loop: the
/// account's `FCMAccessTokenMachine`, and the I/O its actions ask for
/// (signing the assertion with the account's key, posting it through the
/// fetch, or taking the fleet's token). Each change of what the machine
/// knows goes to `published` (every loop's view).
///
/// A send asks `token()` first: while a token is kept (nearly always) that
/// is all, with no allocation; only when it returns nil does the send
/// leave a completion with `awaitToken`.
public final class FCMAccountAccessToken {
    public typealias Waiter = (FCMAccessTokenResult) -> Void

    public let account: FCMServiceAccount
    private let environment: FCMAccessTokens.Environment
    private var machine: FCMAccessTokenMachine<Waiter>
    /// Read from the account's key at the first fetch, then kept.
    private var signer: RS256Signer?
    private let published: (FCMAccessTokenSnapshot) -> Void
    /// What `published` was last given.
    private var lastPublished = FCMAccessTokenSnapshot.unknown
    /// The last token handed out: a fleet's shared token equal to it is not
    /// taken again (it expired, or FCM rejected it).
    private var lastToken: String?

    init(account: FCMServiceAccount, environment: FCMAccessTokens.Environment,
         published: @escaping (FCMAccessTokenSnapshot) -> Void = { _ in }) {
        self.account = account
        self.environment = environment
        self.published = published
        machine = FCMAccessTokenMachine(account: account)
    }

    /// What the machine knows now.
    var snapshot: FCMAccessTokenSnapshot { machine.snapshot }

    /// The token to send with now, or the failure that holds (the send
    /// ends with its outcome); nil when a fetch must be awaited.
    public func token() -> FCMAccessTokenResult? {
        assert(environment.loop.isOnLoopThread, "FCMAccountAccessToken used off its event loop")
        return machine.token(now: environment.now())
    }

    /// `completion` gets the token, or why there is none, once the fetch
    /// under way (or started now) ends; at once, inside this call, when
    /// `token()` would not be nil.
    public func awaitToken(_ completion: @escaping Waiter) {
        assert(environment.loop.isOnLoopThread, "FCMAccountAccessToken used off its event loop")
        var actions: [FCMAccessTokenMachine<Waiter>.Action] = []
        machine.wait(completion, now: environment.now(), into: &actions)
        perform(actions)
    }

    /// FCM rejected `token` (a 401 or 403 `FCMVerdict` answers with
    /// `.refreshAccessTokenAndResend`): a new one is fetched unless another
    /// send's rejection already replaced it. The send then asks again.
    public func rejected(token: String) {
        assert(environment.loop.isOnLoopThread, "FCMAccountAccessToken used off its event loop")
        var actions: [FCMAccessTokenMachine<Waiter>.Action] = []
        machine.rejected(token: token, now: environment.now(), into: &actions)
        perform(actions)
    }

    /// The machine's state (tests).
    var state: FCMAccessTokenMachine<Waiter>.State { machine.state }

    // MARK: Actions

    /// Publishes a changed snapshot first, so every loop's view has it
    /// before any waiter's answer reaches that loop.
    private func perform(_ actions: [FCMAccessTokenMachine<Waiter>.Action]) {
        let snapshot = machine.snapshot
        if snapshot != lastPublished {
            lastPublished = snapshot
            published(snapshot)
        }
        for action in actions {
            switch action {
            case .startFetch(let issuedAt):
                startFetch(issuedAt: issuedAt)
            case .handOut(let token, let waiters):
                lastToken = token
                for waiter in waiters { waiter(.token(token)) }
            case .fail(let waiters, let outcome):
                for waiter in waiters { waiter(.unavailable(outcome)) }
            }
        }
    }

    private func startFetch(issuedAt: Int) {
        let assertion = ServiceAccountAssertion(account: account, issuedAt: issuedAt)
        let body: [UInt8]
        do {
            let signer = try signer ?? RS256Signer(privateKeyPEM: account.privateKey.pem)
            self.signer = signer
            body = try assertion.tokenRequestBody(signedBy: signer.sign)
        } catch {
            // CredentialError's descriptions never show the key.
            var actions: [FCMAccessTokenMachine<Waiter>.Action] = []
            machine.signingFailed("\(error)", now: environment.now(), into: &actions)
            logEnd()
            perform(actions)
            return
        }
        // Held until the fetch ends, so its waiters hear of it even when the
        // account was dropped meanwhile (`FCMAccessTokens.keepOnly`).
        guard let sharing = environment.sharing else {
            return environment.fetch(account.tokenEndpoint, body) { result in self.fetchEnded(result) }
        }
        // Only the owner's loop touches this object: the transfers cross to it and back.
        let this = UnsafeTransfer(self)
        let loop = environment.loop
        sharing.obtain(account, replacing: lastToken, now: issuedAt, fetch: { done in
            loop.execute {
                this.value.environment.fetch(this.value.account.tokenEndpoint, body) { result in done(result) }
            }
        }, completion: { result in
            loop.execute { this.value.fetchEnded(result) }
        })
    }

    private func fetchEnded(_ result: TokenFetchResult) {
        assert(environment.loop.isOnLoopThread, "a token fetch completed off the loop")
        var actions: [FCMAccessTokenMachine<Waiter>.Action] = []
        let now = environment.now()
        switch result {
        case .answered(let status, let body, let retryAfterSeconds):
            machine.fetchAnswered(OAuthTokenAnswer(status: status, body: body), retryAfterSeconds: retryAfterSeconds,
                                  now: now, into: &actions)
        case .failed(let detail):
            machine.fetchFailed(detail, now: now, into: &actions)
        case .shared(let token, let keptUntil):
            machine.adopted(token: token, until: keptUntil, now: now, into: &actions)
            environment.log("FCM access token for \(account) taken from the fleet, kept for \(keptUntil - now) s")
            return perform(actions)
        }
        logEnd()
        perform(actions)
    }

    /// One line per fetch: the account (never its key), how long the token
    /// is kept or why there is none (never the token or the assertion).
    private func logEnd() {
        switch machine.state {
        case .valid(_, let fetchedAt, let until, _):
            environment.log("FCM access token for \(account) fetched, kept for \(until - fetchedAt) s")
        case .failed(let verdict, _, let retryNotBefore, let failures):
            let detail: String
            switch verdict {
            case .credentialsRejected(let text), .failed(let text), .retryLater(_, let text): detail = text
            case .delivered, .tokenDead, .refreshAccessTokenAndResend, .timedOut: detail = "\(verdict)"
            }
            environment.log("FCM access token for \(account) not fetched (\(failures) in a row): \(detail);"
                + " next fetch in \(retryNotBefore - environment.now()) s at the earliest")
        case .none, .fetching:
            return
        }
    }
}
