import EventLoop
import FCMCore
import HTTP2Client
import TLS

/// Where the client's access tokens come from: the loop's
/// `FCMLoopAccessTokens` (the process's tokens as this loop reads them), or
/// `FCMAccessTokens` itself on its own loop (tests give their own). Called
/// on the loop.
public protocol FCMAccessTokenSource: AnyObject {
    /// The token to send with now, the outcome that ends the send without
    /// one, or nil when a fetch must be awaited.
    func token(for account: FCMServiceAccount) -> FCMAccessTokenResult?
    /// `completion` runs once, on the loop, when the fetch under way ends.
    func awaitToken(for account: FCMServiceAccount, _ completion: @escaping (FCMAccessTokenResult) -> Void)
    /// FCM refused `token` (401, 403): the next ask fetches a new one.
    func rejected(token: String, for account: FCMServiceAccount)
}

extension FCMAccessTokens: FCMAccessTokenSource {}

/// The FCM client of one event loop (`FCMSender`): one pool of HTTP/2
/// connections to FCM for every service account (the bearer is per
/// request), and one pool per token endpoint for the access tokens'
/// requests (`fetchToken`). After a 401 or 403 a stale token may cause, the
/// token is dropped and the message goes once more with a fresh one.
/// Confined to its loop.
public final class FCMClient: FCMSender {
    /// The longest `Retry-After` taken as given, as on the APNs path.
    public static let maxRetryAfterSeconds = 3_600

    public let loop: EventLoop
    public let settings: FCMSettings
    private let tlsContext: TLSContext
    /// Set before the first send: `FCMAccessTokens` fetches through a
    /// client (`fetchToken`), so the two are made one after the other.
    public var accessTokens: (any FCMAccessTokenSource)?
    private let pool: HTTP2Pool
    /// Token endpoints' pools by `host:port`.
    private var tokenPools: [String: HTTP2Pool] = [:]

    public init(loop: EventLoop, settings: FCMSettings, tlsContext: TLSContext) {
        self.loop = loop
        self.settings = settings
        self.tlsContext = tlsContext
        pool = Self.makePool(loop: loop, host: settings.host, port: settings.port, settings: settings,
                             tlsContext: tlsContext)
    }

    private static func makePool(loop: EventLoop, host: String, port: UInt16, settings: FCMSettings,
                                 tlsContext: TLSContext) -> HTTP2Pool {
        let endpoint = HTTP2Endpoint(
            host: host, port: port, authority: port == 443 ? host : "\(host):\(port)", tlsContext: tlsContext,
            authorizer: nil, connectTimeout: settings.connectTimeout, pingInterval: settings.pingInterval,
            pingTimeout: settings.pingTimeout)
        let limits = HTTP2PoolMachine.Limits(
            maxConnections: max(1, settings.maxConnections), maxQueued: max(0, settings.maxQueued),
            answerTimeout: settings.answerTimeout.saturatingNanoseconds,
            backoffBase: settings.backoffBase.saturatingNanoseconds,
            backoffCap: settings.backoffCap.saturatingNanoseconds)
        return HTTP2Pool(loop: loop, endpoint: endpoint, limits: limits)
    }

    // MARK: Sending

    /// `FCMSender`: `completion` runs exactly once, on the loop, never
    /// inside this call.
    public func send(_ notification: FCMNotification, completion: @escaping (FCMDelivery) -> Void) {
        send(notification, afterTokenRefresh: false, completion: completion)
    }

    private func send(_ notification: FCMNotification, afterTokenRefresh: Bool,
                      completion: @escaping (FCMDelivery) -> Void) {
        guard let accessTokens else { preconditionFailure("FCMClient: send before accessTokens is set") }
        if let kept = accessTokens.token(for: notification.account) {
            return send(notification, with: kept, afterTokenRefresh: afterTokenRefresh, completion: completion)
        }
        accessTokens.awaitToken(for: notification.account) { [self] result in
            send(notification, with: result, afterTokenRefresh: afterTokenRefresh, completion: completion)
        }
    }

    private func send(_ notification: FCMNotification, with token: FCMAccessTokenResult, afterTokenRefresh: Bool,
                      completion: @escaping (FCMDelivery) -> Void) {
        switch token {
        case .token(let token):
            pool.send(PooledFCMMessage(notification, accessToken: token, afterTokenRefresh: afterTokenRefresh,
                                       client: self, completion: completion))
        case .unavailable(let outcome):
            // Never inside `send`: the token source may know at once.
            loop.schedule(after: .zero) { completion(FCMDelivery(outcome: outcome)) }
        }
    }

    /// A message's end: FCM's refusal of a stale token sends it once more
    /// with a fresh one; anything else is the sender's.
    func finished(_ message: PooledFCMMessage, _ answer: PooledAnswer) {
        let outcome = message.outcome(answer)
        if outcome.verdict == .refreshAccessTokenAndResend, !message.afterTokenRefresh, let accessTokens {
            accessTokens.rejected(token: message.accessToken, for: message.notification.account)
            return send(message.notification, afterTokenRefresh: true, completion: message.completion)
        }
        message.completion(FCMDelivery(outcome: outcome))
    }

    // MARK: Access tokens' requests

    /// `FCMAccessTokens`' `TokenFetch`: posts a token request (`form`,
    /// form-encoded) to `endpoint`, over a pool of its own per host and
    /// port, bounded by `FCM_TIMEOUT`. `completion` runs exactly once, on
    /// the loop, never inside this call. Handed over as
    /// `{ [unowned client] in client.fetchToken($0, $1, $2) }`: the client
    /// keeps the access tokens.
    public func fetchToken(_ endpoint: OAuthTokenEndpoint, _ form: [UInt8],
                           _ completion: @escaping (TokenFetchResult) -> Void) {
        let key = "\(endpoint.host):\(endpoint.port)"
        let tokenPool = tokenPools[key] ?? {
            let made = Self.makePool(loop: loop, host: endpoint.host, port: UInt16(endpoint.port), settings: settings,
                                     tlsContext: tlsContext)
            tokenPools[key] = made
            return made
        }()
        tokenPool.send(PooledTokenRequest(target: endpoint.target, form: form, completion: completion))
    }

    // MARK: Shutdown and counts

    /// Graceful, as `APNsClient.shutdown`: what waits fails, open streams
    /// finish (at most `FCM_TIMEOUT`), connections close, then `done`.
    public func shutdown(_ done: @escaping () -> Void) {
        let pools = [pool] + Array(tokenPools.values)
        var remaining = pools.count
        for each in pools {
            each.shutdown {
                remaining -= 1
                if remaining == 0 { done() }
            }
        }
    }

    /// The FCM pool's counts (the token endpoints' excluded).
    public var counters: PoolCounters { pool.counters }
}
