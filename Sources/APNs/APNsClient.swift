import EventLoop
import Glibc
import RelayCore
import TLS

/// Everything an `APNsClient` needs; one value can serve every loop.
public struct APNsClientConfiguration: Sendable {
    public var productionHost: HostAndPort
    public var developmentHost: HostAndPort
    /// One context per process (TLS ≥ 1.2, ALPN h2, roots, certificate).
    public var tlsContext: TLSContext
    /// Token auth; nil with certificate auth.
    public var tokenProvider: APNsTokenProvider?
    /// Resolve + TCP connect + TLS handshake + the server's first SETTINGS.
    public var connectTimeout: Duration = .seconds(5)
    /// From `send` to the answer (ARCHITECTURE.md §6).
    public var answerTimeout: Duration = .seconds(8)
    public var pingInterval: Duration = .seconds(60)
    public var pingTimeout: Duration = .seconds(5)
    /// Connections per environment (per client, i.e. per loop).
    public var maxConnectionsPerEnvironment = 4
    /// Requests waiting for a stream, per environment; beyond: `.overloaded`.
    public var maxQueuedPerEnvironment = 20_000
    /// Backoff after a failed connection attempt: base·2^(n−1), capped,
    /// with half of it random.
    public var backoffBase: Duration = .milliseconds(500)
    public var backoffCap: Duration = .seconds(15)
    /// Unix seconds, for provider tokens.
    public var wallClock: @Sendable () -> Int = { Int(time(nil)) }

    public init(productionHost: HostAndPort, developmentHost: HostAndPort, tlsContext: TLSContext,
                tokenProvider: APNsTokenProvider? = nil) {
        self.productionHost = productionHost
        self.developmentHost = developmentHost
        self.tlsContext = tlsContext
        self.tokenProvider = tokenProvider
    }

    /// Hosts, timeouts and limits from the relay's configuration.
    public init(_ configuration: Configuration, tlsContext: TLSContext, credentials: APNsCredentials) {
        self.init(productionHost: configuration.productionHost, developmentHost: configuration.developmentHost,
                  tlsContext: tlsContext, tokenProvider: credentials.tokenProvider)
        connectTimeout = configuration.apnsConnectTimeout
        answerTimeout = configuration.apnsAnswerTimeout
        pingInterval = configuration.apnsPingInterval
        pingTimeout = configuration.apnsPingTimeout
        maxConnectionsPerEnvironment = configuration.apnsMaxConnections
        maxQueuedPerEnvironment = configuration.maxInFlight
    }

    public func host(for environment: APNsEnvironment) -> HostAndPort {
        environment == .production ? productionHost : developmentHost
    }
}

/// APNs refused our credentials (HTTP 403): the relay's health turns 503.
public struct APNsCredentialRejection: Sendable, Equatable {
    public var environment: APNsEnvironment
    public var status: Int
    public var reason: APNsReason?
    /// Unix seconds.
    public var time: Int
}

/// A snapshot for health checks and metrics.
public struct APNsClientStatus: Sendable, Equatable {
    /// Connections of both environments by state (closed ones are gone).
    public var connections: [APNsConnectionState: Int]
    /// Requests on an HTTP/2 stream, waiting for the answer.
    public var inFlight: Int
    /// Requests waiting for a stream.
    public var queued: Int
    public var counters: APNsCounters
    public var lastCredentialRejection: APNsCredentialRejection?
    /// True while the latest 200-or-403 answer of either environment was a
    /// 403: the health check answers 503 (ARCHITECTURE.md §1).
    public var credentialsRejected: Bool
    /// The last failed connection attempt, either environment.
    public var lastConnectFailure: ConnectionFailure?
    /// The last ready connection that died, either environment.
    public var lastConnectionLoss: ConnectionFailure?
}

/// The APNs client of one event loop: a connection pool per environment.
/// Confined to its loop's thread (`send`, `shutdown`, `status` included).
public final class APNsClient: NotificationSender {
    public let loop: EventLoop
    public let configuration: APNsClientConfiguration
    let production: APNsPool
    let development: APNsPool
    public private(set) var lastCredentialRejection: APNsCredentialRejection?

    public init(loop: EventLoop, configuration: APNsClientConfiguration) {
        // OpenSSL writes to the socket with write(2), not send(MSG_NOSIGNAL):
        // a write to a connection APNs already closed (it may close right
        // after its GOAWAY) raises SIGPIPE, which kills a process that has
        // not ignored it (tests, embedders). Idempotent, process-wide.
        ignoreSIGPIPE()
        self.loop = loop
        self.configuration = configuration
        func makePool(_ environment: APNsEnvironment) -> APNsPool {
            let host = configuration.host(for: environment)
            let endpoint = APNsEndpoint(
                host: host.host, port: host.port,
                authority: host.port == 443 ? host.host : host.description,
                tlsContext: configuration.tlsContext, tokenProvider: configuration.tokenProvider,
                connectTimeout: configuration.connectTimeout, pingInterval: configuration.pingInterval,
                pingTimeout: configuration.pingTimeout, wallClock: configuration.wallClock)
            let limits = APNsPoolLimits(
                maxConnections: max(1, configuration.maxConnectionsPerEnvironment),
                maxQueued: max(0, configuration.maxQueuedPerEnvironment),
                answerTimeout: configuration.answerTimeout,
                backoffBase: configuration.backoffBase, backoffCap: configuration.backoffCap)
            return APNsPool(environment: environment, loop: loop, endpoint: endpoint, limits: limits)
        }
        production = makePool(.production)
        development = makePool(.development)
        for pool in [production, development] {
            let environment = pool.environment
            pool.onCredentialRejection = { [weak self] status, reason in
                guard let self else { return }
                self.lastCredentialRejection = APNsCredentialRejection(
                    environment: environment, status: status, reason: reason, time: self.configuration.wallClock())
            }
        }
    }

    /// `NotificationSender`: the outcome only.
    public func send(_ notification: APNsNotification, completion: @escaping (DeliveryOutcome) -> Void) {
        let request = PendingRequest(notification: notification, completion: .outcome(completion))
        pool(for: notification.environment).send(request)
    }

    /// The outcome and, for 410, APNs' timestamp. `deliveryCompletion` runs
    /// exactly once, on the loop thread, never inside this call.
    public func send(_ notification: APNsNotification, deliveryCompletion: @escaping (APNsDelivery) -> Void) {
        let request = PendingRequest(notification: notification, completion: deliveryCompletion)
        pool(for: notification.environment).send(request)
    }

    /// Graceful: waiting requests fail (`.allConnectionsDown`), new sends fail
    /// the same way, GOAWAY goes to every connection, open streams finish
    /// (at most the answer timeout), connections close, then `done` runs.
    public func shutdown(_ done: @escaping () -> Void) {
        var remaining = 2
        let one = {
            remaining -= 1
            if remaining == 0 { done() }
        }
        production.shutdown(one)
        development.shutdown(one)
    }

    public var status: APNsClientStatus {
        var connections: [APNsConnectionState: Int] = [:]
        production.connectionCounts(into: &connections)
        development.connectionCounts(into: &connections)
        return APNsClientStatus(
            connections: connections,
            inFlight: production.inFlightCount + development.inFlightCount,
            queued: production.queuedCount + development.queuedCount,
            counters: production.counters + development.counters,
            lastCredentialRejection: lastCredentialRejection,
            credentialsRejected: production.credentialsRejected || development.credentialsRejected,
            lastConnectFailure: production.lastConnectFailure ?? development.lastConnectFailure,
            lastConnectionLoss: production.lastConnectionLoss ?? development.lastConnectionLoss)
    }

    private func pool(for environment: APNsEnvironment) -> APNsPool {
        environment == .production ? production : development
    }
}
