import EventLoop
import FCM
import FCMCore
import Glibc
import Locking
import Observability
import Redis

/// One FCM access token per service account across a fleet (`REDIS_URL`):
/// the token lives in Redis (`FleetKeys.fcmAccessToken`, a
/// `SharedAccessToken`) until its keep ends, and an instance whose token
/// must be renewed takes the fleet's instead of fetching. When there is
/// none (absent, its keep over, the one the instance is replacing), the
/// instance that swaps the key to `renewing <instance>` (`swapScript`, a
/// compare-and-set) fetches and publishes; the others poll until the token
/// is there. Redis down, a renewing instance that never publishes, a
/// compare that keeps failing: each instance fetches its own, so delivery
/// never waits on Redis for long.
public final class AccessTokenSharing: FCMAccessTokenSharing {
    let link: RedisLink
    private let instance: String
    private let now: @Sendable () -> Int
    private let logger: Logger
    /// The keys whose value was refused, so that one bad value is one line.
    private let refusedValues = Locked<[String: [UInt8]]>([:])

    /// How long the `renewing` mark stands: a token request takes at most
    /// FCM_TIMEOUT (8 s by default); an instance that died fetching frees
    /// the key after this.
    public static let renewalLeaseSeconds = 15
    /// Between two reads of a key another instance is renewing.
    public static let pollInterval: Duration = .milliseconds(250)
    /// Reads before an instance gives up waiting and fetches its own: a
    /// little longer than the lease, so a dead renewer's key is free again.
    public static let maxPolls = 68
    /// A keep further ahead than this is no token's (`expires_in` is held to a day).
    public static let maximumKeepSeconds = 86_400

    /// Sets the key to ARGV[2] (expiring in ARGV[3] seconds; "" deletes it)
    /// only if it still holds ARGV[1] ("": absent), atomically: of several
    /// instances renewing one key at once exactly one succeeds.
    static let swapScript = """
        local current = redis.call('GET', KEYS[1])
        if (current == false and ARGV[1] == '') or current == ARGV[1] then
          if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) end
          return 1
        end
        return 0
        """

    /// `instance` names this instance in the `renewing` mark (the fleet's
    /// consumer name, as the start-up line shows it).
    public init(link: RedisLink, instance: String, now: @escaping @Sendable () -> Int = { Int(time(nil)) },
                logger: Logger) {
        self.link = link
        self.instance = instance
        self.now = now
        self.logger = logger
    }

    /// One account's wish for a token, carried from read to read.
    private struct Wish: Sendable {
        let name: String
        let key: [UInt8]
        let replacing: String?
        let fetch: @Sendable (@escaping @Sendable (TokenFetchResult) -> Void) -> Void
        let completion: @Sendable (TokenFetchResult) -> Void
    }

    public func obtain(_ account: FCMServiceAccount, replacing: String?, now: Int,
                       fetch: @escaping @Sendable (@escaping @Sendable (TokenFetchResult) -> Void) -> Void,
                       completion: @escaping @Sendable (TokenFetchResult) -> Void) {
        let name = FleetKeys.fcmAccessToken(clientEmail: account.clientEmail, privateKeyID: account.privateKeyID)
        read(Wish(name: name, key: Array(name.utf8), replacing: replacing, fetch: fetch, completion: completion), polls: 0)
    }

    private func read(_ wish: Wish, polls: Int) {
        // A link that is down would hold the sends waiting for this token
        // for the command timeout: the instance fetches its own at once.
        // A link still making its first connection is not down: the
        // command waits for it, so instances starting together share.
        guard link.isConnected || link.failureCount == 0 else { return fetchOwn(wish) }
        link.send(RedisCommand([Array("GET".utf8), wish.key])) { result in
            guard case .success(let value) = result else { return self.fetchOwn(wish) }
            let current = value.bytes
            guard let current else { return self.claim(wish, current: nil, polls: polls) }
            switch self.check(current, of: wish) {
            case .token(let token, let keptUntil):
                wish.completion(.shared(token: token, keptUntil: keptUntil))
            case .renewing:
                guard polls < Self.maxPolls else { return self.fetchOwn(wish) }
                _ = self.link.loop.schedule(after: Self.pollInterval) { self.read(wish, polls: polls + 1) }
            case nil:
                self.claim(wish, current: current, polls: polls)
            }
        }
    }

    /// The key's value as this instance may use it: a token kept long
    /// enough and not the one being replaced, or another instance's
    /// renewal; nil for anything to replace (one line per refused value).
    private func check(_ bytes: [UInt8], of wish: Wish) -> SharedAccessToken? {
        let reason: String
        switch SharedAccessToken.decode(bytes) {
        case .success(.renewing(let instance)):
            return .renewing(instance: instance)
        case .success(.token(let token, let keptUntil)):
            let now = self.now()
            if keptUntil - now > Self.maximumKeepSeconds {
                reason = "kept \(keptUntil - now) s ahead, more than \(Self.maximumKeepSeconds)"
            } else if keptUntil <= now || token == wish.replacing {
                // Ended or rejected, not hostile: replaced quietly. (A keep
                // ends 300 s before the token expires: OAuthAccessToken.keepSeconds.)
                return nil
            } else {
                return .token(token, keptUntil: keptUntil)
            }
        case .failure(let failure):
            reason = failure.description
        }
        let first = refusedValues.withLock { refused in
            guard refused[wish.name] != bytes else { return false }
            refused[wish.name] = bytes
            return true
        }
        if first { logger.warning("fleet: the FCM access token in \(wish.name) is not used: \(reason); a new one replaces it") }
        return nil
    }

    /// Marks the key `renewing` if it still holds `current` (nil: absent);
    /// the instance that did fetches, the others read again.
    private func claim(_ wish: Wish, current: [UInt8]?, polls: Int) {
        let mark = SharedAccessToken.renewing(instance: instance).encoded
        swap(wish.key, from: current ?? [], to: mark, lifetime: Self.renewalLeaseSeconds) { swapped in
            switch swapped {
            case true?:
                let startedAt = self.now()
                wish.fetch { result in
                    self.publish(result, of: wish, startedAt: startedAt, replacing: mark)
                    wish.completion(result)
                }
            case false?:
                guard polls < Self.maxPolls else { return self.fetchOwn(wish) }
                self.read(wish, polls: polls + 1)
            case nil:
                self.fetchOwn(wish)
            }
        }
    }

    /// The fetched token for the fleet, kept as the fetching instance keeps
    /// it; a fetch without one frees the key for the next instance to try.
    private func publish(_ result: TokenFetchResult, of wish: Wish, startedAt: Int, replacing mark: [UInt8]) {
        var value: [UInt8] = []
        var lifetime = 1
        if case .answered(let status, let body, _) = result, case .token(let token) = OAuthTokenAnswer(status: status, body: body) {
            let keptUntil = startedAt + token.keepSeconds
            value = SharedAccessToken.token(token.value, keptUntil: keptUntil).encoded
            lifetime = max(1, keptUntil - now())
        }
        swap(wish.key, from: mark, to: value, lifetime: lifetime) { _ in }
    }

    private func swap(_ key: [UInt8], from current: [UInt8], to value: [UInt8], lifetime: Int,
                      done: @escaping @Sendable (Bool?) -> Void) {
        let command = RedisCommand([Array("EVAL".utf8), Array(Self.swapScript.utf8), Array("1".utf8), key, current,
                                    value, Array(String(lifetime).utf8)])
        link.send(command) { result in
            switch result {
            case .success(.integer(1)): done(true)
            case .success(.integer(0)): done(false)
            case .success, .failure: done(nil)
            }
        }
    }

    /// Redis cannot decide: this instance fetches for itself.
    private func fetchOwn(_ wish: Wish) {
        wish.fetch { result in wish.completion(result) }
    }
}
