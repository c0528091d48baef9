import APNs
import Dispatch
import Locking
import Observability
import Redis

/// One provider token per key across a fleet (`REDIS_URL`). Apple refuses
/// a key's token when it changes more often than every 20 minutes (429
/// TooManyProviderTokenUpdates), and every instance signing its own would
/// change it each time another instance's token arrives. So the key's token
/// lives in Redis (`FleetKeys.providerToken`, a `SharedProviderToken`):
/// every instance adopts it (`APNsTokenProvider.adopt`); when it is
/// `renewalAge` old, or absent, one instance publishes a new one with a
/// compare-and-set (`publishScript`) and the others, whose compare fails,
/// adopt the winner's.
///
/// `renewalAge` is 45 minutes, before the provider's own renewal at 50:
/// while Redis answers (checked every `checkInterval`), no instance signs
/// on its own. An instance that cannot reach Redis keeps its provider as it
/// is, which signs its own token at 50 minutes rather than fail a push.
///
/// The APNs module knows nothing of Redis: this drives each provider
/// through `inUse`, `sign`, `adopt` and `isSigningHeld`.
public final class ProviderTokenSharing: Sendable {
    let link: RedisLink
    private let providers: @Sendable () -> [APNsTokenProvider]
    private let now: @Sendable () -> Int
    private let logger: Logger
    /// The keys whose value was refused, so that one bad value is one line.
    private let refusedValues = Locked<[String: [UInt8]]>([:])

    public static let renewalAge = APNsTokenProvider.renewalAge - 5 * 60
    public static let checkInterval: Duration = .seconds(5)

    /// Sets the key to ARGV[2] (expiring in ARGV[3] seconds) only if it
    /// still holds ARGV[1] ("": absent), atomically: of several instances
    /// renewing one key at once exactly one succeeds, and the others see
    /// its token. GET then SET from the client could not promise that.
    static let publishScript = """
        local current = redis.call('GET', KEYS[1])
        if (current == false and ARGV[1] == '') or current == ARGV[1] then
          redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
          return 1
        end
        return 0
        """

    public init(link: RedisLink, providers: @escaping @Sendable () -> [APNsTokenProvider],
                now: @escaping @Sendable () -> Int, logger: Logger) {
        self.link = link
        self.providers = providers
        self.now = now
        self.logger = logger
    }

    /// Every provider's token in step with the fleet's once; `done` runs
    /// on the link's thread when all are (or Redis failed for them).
    public func synchronizeAll(done: @escaping @Sendable () -> Void = {}) {
        let providers = providers()
        guard !providers.isEmpty else {
            done()
            return
        }
        let left = Locked(providers.count)
        for provider in providers {
            synchronize(provider) {
                if left.withLock({ $0 -= 1; return $0 }) == 0 { done() }
            }
        }
    }

    /// `synchronizeAll`, waiting for it at most `timeout` (start-up, before
    /// the first APNs request; never on a loop). False when it did not end
    /// in time: the providers keep their own tokens meanwhile.
    public func synchronizeAll(waitingAtMost timeout: Duration) -> Bool {
        let finished = DispatchSemaphore(value: 0)
        synchronizeAll { finished.signal() }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return finished.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    /// Checks every `checkInterval` on the link's loop until it closes.
    public func start() {
        link.loop.execute { self.tick() }
    }

    private func tick() {
        synchronizeAll {
            _ = self.link.loop.schedule(after: Self.checkInterval) { self.tick() }
        }
    }

    private func key(_ provider: APNsTokenProvider) -> [UInt8] {
        Array(FleetKeys.providerToken(teamID: provider.teamID, keyID: provider.keyID).utf8)
    }

    /// Reads the key's shared token: adopts it while it is young, publishes
    /// a new one when it is due, absent or unusable.
    func synchronize(_ provider: APNsTokenProvider, done: @escaping @Sendable () -> Void) {
        link.send(RedisCommand([Array("GET".utf8), key(provider)])) { result in
            switch result {
            case .failure:
                // Redis unreachable: the provider goes on with its own token.
                done()
            case .success(.null):
                self.publish(provider, replacing: nil, done: done)
            case .success(let value):
                guard let bytes = value.bytes else {
                    self.publish(provider, replacing: nil, done: done)
                    return
                }
                let now = self.now()
                guard let shared = self.check(bytes, for: provider, now: now) else {
                    self.publish(provider, replacing: bytes, done: done)
                    return
                }
                if now - shared.issuedAt >= Self.renewalAge {
                    self.publish(provider, replacing: bytes, done: done)
                } else {
                    provider.adopt(token: shared.token, issuedAt: shared.issuedAt, now: now)
                    done()
                }
            }
        }
    }

    /// The shared token read back, when it is one the provider can send:
    /// decoded, of the provider's key, issued not ahead of `now` by more
    /// than a minute, and usable. Otherwise nil, and one line per value.
    private func check(_ bytes: [UInt8], for provider: APNsTokenProvider, now: Int) -> SharedProviderToken? {
        let reason: String
        switch SharedProviderToken.decode(bytes) {
        case .failure(let failure):
            reason = failure.description
        case .success(let shared):
            if !provider.isWellFormed(shared.token, issuedAt: shared.issuedAt) {
                reason = "the token is not one of key \(provider.keyID) with that iat"
            } else if shared.issuedAt > now + 60 {
                reason = "issued \(shared.issuedAt - now) s ahead of this clock"
            } else if now - shared.issuedAt >= APNsTokenProvider.maximumAge - APNsTokenProvider.expiryMargin {
                // Old, not hostile: the key outlived its token (a fleet that was down); replaced quietly.
                return nil
            } else {
                return shared
            }
        }
        let name = FleetKeys.providerToken(teamID: provider.teamID, keyID: provider.keyID)
        let first = refusedValues.withLock { refused in
            guard refused[name] != bytes else { return false }
            refused[name] = bytes
            return true
        }
        if first { logger.warning("fleet: the provider token in \(name) is not used: \(reason); a new one replaces it") }
        return nil
    }

    /// Publishes a token for the key if it still holds `replacing` (nil:
    /// absent), then adopts what the key holds: this instance's token when
    /// it won, the winner's when another instance published first. The
    /// token published is the provider's own while it is young (no new
    /// token for APNs to count), else a new one, unless APNs refused an
    /// update within 20 minutes.
    private func publish(_ provider: APNsTokenProvider, replacing: [UInt8]?, done: @escaping @Sendable () -> Void) {
        let now = self.now()
        let own = provider.inUse
        let candidate: SharedProviderToken
        if now - own.issuedAt < Self.renewalAge, own.issuedAt <= now + 60 {
            candidate = SharedProviderToken(issuedAt: own.issuedAt, token: own.token)
        } else {
            guard !provider.isSigningHeld(now: now), let token = provider.sign(issuedAt: now) else {
                done()
                return
            }
            candidate = SharedProviderToken(issuedAt: now, token: token)
        }
        let lifetime = max(1, APNsTokenProvider.maximumAge - (now - candidate.issuedAt))
        let command = RedisCommand([Array("EVAL".utf8), Array(Self.publishScript.utf8), Array("1".utf8), key(provider),
                                    replacing ?? [], candidate.encoded, Array(String(lifetime).utf8)])
        link.send(command) { result in
            switch result {
            case .success(.integer(1)):
                provider.adopt(token: candidate.token, issuedAt: candidate.issuedAt, now: self.now())
                done()
            case .success(.integer(0)):
                // Another instance published first: take its token.
                self.link.send(RedisCommand([Array("GET".utf8), self.key(provider)])) { result in
                    if case .success(let value) = result, let bytes = value.bytes,
                       let shared = self.check(bytes, for: provider, now: self.now()) {
                        provider.adopt(token: shared.token, issuedAt: shared.issuedAt, now: self.now())
                    }
                    done()
                }
            case .success, .failure:
                done()
            }
        }
    }
}
