import APNsCore
import EventLoop
import Glibc
import HTTP2Client

/// Everything an `APNsClient` needs; one value can serve every loop.
public struct APNsClientConfiguration: Sendable {
    public var settings: APNsSettings
    /// The credentials, by id (one TLS context each, made at first use).
    public var credentials: APNsCredentialCatalog
    /// Unix seconds, for provider tokens.
    public var wallClock: @Sendable () -> Int = { Int(time(nil)) }

    public init(_ settings: APNsSettings, credentials: APNsCredentialCatalog) {
        self.settings = settings
        self.credentials = credentials
    }
}

/// APNs' names for the states and counts of its pools' connections, as the
/// metrics and the log's connection lines say them.
public typealias APNsConnectionState = HTTP2ConnectionState
public typealias APNsCounters = PoolCounters

/// A snapshot of one loop's client, for the metrics and the log's
/// connection lines (`APNsConnectionReport` in Relay, each tick).
public struct APNsClientStatus: Sendable, Equatable {
    /// Connections of both environments by state (closed ones are gone).
    public var connections: [APNsConnectionState: Int]
    /// Requests on an HTTP/2 stream, waiting for the answer.
    public var inFlight: Int
    /// Requests waiting for a stream.
    public var queued: Int
    public var counters: APNsCounters
    /// The last failed connection attempt, either environment.
    public var lastConnectFailure: ConnectionFailure?
    /// The last ready connection that died, either environment.
    public var lastConnectionLoss: ConnectionFailure?
}

/// The APNs client of one event loop: a connection pool per credential and
/// environment, opened by the first request for it and closed when idle
/// (`idleTimeout`) or when a reload retired its credential and nothing is
/// left on it. Confined to its loop's thread (`send`, `shutdown`, `status`
/// included), and it calls nothing back while it changes its state, so that
/// state skips the dynamic exclusivity checks (`@exclusivity(unchecked)`):
/// `send` read `lastPool` under one (callgrind: about 80 instructions per
/// notification).
public final class APNsClient: NotificationSender {
    struct PoolKey: Hashable {
        var credential: CredentialID
        var environment: APNsEnvironment
        /// Notifications and broadcasts share the notification host's pool;
        /// channel management has its own host.
        var host: APNsBroadcastHost = .notifications
    }

    public let loop: EventLoop
    public let configuration: APNsClientConfiguration
    @exclusivity(unchecked) private var pools: [PoolKey: HTTP2Pool] = [:]
    /// The pool of the last send: with one app (the common case) every
    /// send finds it without hashing (callgrind: a dictionary lookup per send
    /// is most of the 2 % per notification that per-credential pools cost).
    @exclusivity(unchecked) private var lastPool: (key: PoolKey, pool: HTTP2Pool)?
    /// Pools closing (idle, retired): kept until their last stream ended.
    @exclusivity(unchecked) private var closingPools: [ObjectIdentifier: HTTP2Pool] = [:]
    /// Counts of pools closed, kept for `status`.
    @exclusivity(unchecked) private var closedCounters = APNsCounters()
    @exclusivity(unchecked) private var sweepTimer: TimerID?
    @exclusivity(unchecked) private var isShutDown = false
    @exclusivity(unchecked) private var lastConnectFailure: ConnectionFailure?
    @exclusivity(unchecked) private var lastConnectionLoss: ConnectionFailure?

    public init(loop: EventLoop, configuration: APNsClientConfiguration) {
        // OpenSSL writes to the socket with write(2), not send(MSG_NOSIGNAL):
        // a write to a connection APNs already closed (it may close right
        // after its GOAWAY) raises SIGPIPE, which kills a process that has
        // not ignored it (tests, embedders). Idempotent, process-wide.
        ignoreSIGPIPE()
        self.loop = loop
        self.configuration = configuration
    }

    /// `NotificationSender`: the outcome and, for 410, APNs' timestamp.
    /// `completion` runs exactly once, on the loop thread, never inside
    /// this call.
    public func send(_ notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        send(PooledNotification(notification: notification, completion: completion))
    }

    /// `NotificationSender`: Apple's request, answered with the answer's
    /// `apns-unique-id` when APNs sent one (`PooledProxiedNotification`).
    public func sendProxied(_ notification: APNsNotification,
                            completion: @escaping (APNsDelivery, _ uniqueID: String?) -> Void) {
        send(PooledProxiedNotification(notification: notification, completion: completion))
    }

    private func send(_ request: PooledNotification) {
        let key = PoolKey(credential: request.notification.credential, environment: request.notification.environment)
        if let last = lastPool, last.key == key { return last.pool.send(request) }
        send(request, key: key)
    }

    /// The pool of `key` (made at first use) takes `request`.
    func send(_ request: PooledRequest, key: PoolKey) {
        if let pool = pools[key] {
            lastPool = (key, pool)
            return pool.send(request)
        }
        let failure: RequestFailure
        do {
            if let credential = try configuration.credentials.endpointCredential(key.credential), !isShutDown {
                let pool = makePool(key, credential: credential)
                pools[key] = pool
                lastPool = (key, pool)
                armSweep()
                return pool.send(request)
            }
            // Shut down, or a credential a reload retired after the request
            // was routed (the daemon swaps the apps on every loop first, so
            // this does not happen; it must not crash if it does).
            failure = .allConnectionsDown
        } catch {
            failure = .tlsFailed("cannot set up TLS for \(key.credential): \(error)")
        }
        loop.schedule(after: .zero) { request.complete(.failed(failure)) }
    }

    private func makePool(_ key: PoolKey, credential: APNsEndpointCredential) -> HTTP2Pool {
        let settings = configuration.settings
        let host = settings.host(key.host, for: key.environment)
        let authorizer = credential.tokenProvider.map {
            APNsTokenAuthorizer(provider: $0, wallClock: configuration.wallClock)
        }
        let endpoint = HTTP2Endpoint(
            host: host.host, port: host.port,
            authority: host.port == 443 ? host.host : host.description,
            tlsContext: credential.tlsContext, authorizer: authorizer,
            connectTimeout: settings.connectTimeout, pingInterval: settings.pingInterval,
            pingTimeout: settings.pingTimeout)
        let limits = HTTP2PoolMachine.Limits(
            maxConnections: max(1, settings.maxConnectionsPerEnvironment),
            maxQueued: max(0, settings.maxQueuedPerEnvironment),
            answerTimeout: settings.answerTimeout.saturatingNanoseconds,
            backoffBase: settings.backoffBase.saturatingNanoseconds,
            backoffCap: settings.backoffCap.saturatingNanoseconds)
        return HTTP2Pool(loop: loop, endpoint: endpoint, limits: limits)
    }

    // MARK: Idle and retired pools

    private func armSweep() {
        guard sweepTimer == nil, !isShutDown else { return }
        sweepTimer = loop.schedule(after: configuration.settings.idleSweepInterval) { [weak self] in
            guard let self else { return }
            self.sweepTimer = nil
            self.closeIdlePools()
            if !self.pools.isEmpty { self.armSweep() }
        }
    }

    /// Closes every pool with nothing queued or in flight whose credential
    /// is retired or that carried nothing for `idleTimeout`.
    func closeIdlePools() {
        let idleNanoseconds = configuration.settings.idleTimeout.saturatingNanoseconds
        for (key, pool) in pools where pool.queuedCount == 0 && pool.inFlightCount == 0 {
            let retired = !configuration.credentials.contains(key.credential)
            guard retired || loop.now &- pool.lastSend >= idleNanoseconds else { continue }
            pools.removeValue(forKey: key)
            if lastPool?.key == key { lastPool = nil }
            close(pool)
        }
    }

    private func close(_ pool: HTTP2Pool) {
        let id = ObjectIdentifier(pool)
        closingPools[id] = pool
        pool.shutdown { [weak self] in
            guard let self, let pool = self.closingPools.removeValue(forKey: id) else { return }
            self.remember(pool)
        }
    }

    /// Keeps what `status` reports of a pool that is gone.
    private func remember(_ pool: HTTP2Pool) {
        closedCounters = closedCounters + pool.counters
        lastConnectFailure = pool.lastConnectFailure ?? lastConnectFailure
        lastConnectionLoss = pool.lastConnectionLoss ?? lastConnectionLoss
    }

    // MARK: Shutdown and status

    /// Graceful: waiting requests fail (`.allConnectionsDown`), new sends fail
    /// the same way, GOAWAY goes to every connection, open streams finish
    /// (at most the answer timeout), connections close, then `done` runs.
    public func shutdown(_ done: @escaping () -> Void) {
        isShutDown = true
        if let sweepTimer { loop.cancel(sweepTimer) }
        sweepTimer = nil
        let all = Array(pools.values) + Array(closingPools.values)
        var remaining = all.count + 1
        let one = {
            remaining -= 1
            if remaining == 0 { done() }
        }
        for pool in all { pool.shutdown(one) }
        one()
    }

    public var status: APNsClientStatus {
        var connections: [APNsConnectionState: Int] = [:]
        var counters = closedCounters
        var inFlight = 0
        var queued = 0
        var connectFailure: ConnectionFailure?
        var connectionLoss: ConnectionFailure?
        for pool in Array(pools.values) + Array(closingPools.values) {
            pool.connectionCounts(into: &connections)
            counters = counters + pool.counters
            inFlight += pool.inFlightCount
            queued += pool.queuedCount
            connectFailure = connectFailure ?? pool.lastConnectFailure
            connectionLoss = connectionLoss ?? pool.lastConnectionLoss
        }
        return APNsClientStatus(
            connections: connections, inFlight: inFlight, queued: queued, counters: counters,
            lastConnectFailure: connectFailure ?? lastConnectFailure,
            lastConnectionLoss: connectionLoss ?? lastConnectionLoss)
    }
}
