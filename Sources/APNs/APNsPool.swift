import EventLoop
import RelayCore

/// Settings a pool needs beyond its endpoint.
struct APNsPoolLimits {
    var maxConnections: Int
    var maxQueued: Int
    var answerTimeout: Duration
    var backoffBase: Duration
    var backoffCap: Duration
}

/// The connections to one APNs environment from one event loop, and the
/// requests waiting for a stream.
///
/// Policy:
/// - connect lazily: the first request opens the first connection;
/// - a request goes to the first ready connection with a free stream
///   (the server's SETTINGS_MAX_CONCURRENT_STREAMS minus open streams) and
///   room for its body in the server's connection flow-control window
///   (`APNsConnection.canTake`); requests leave the queue in order;
/// - when no connection can take the next request, another is opened (one being
///   established at a time) up to `maxConnections` (draining ones excluded);
/// - beyond that, requests wait in a queue of at most `maxQueued`, then are
///   refused with `.overloaded`;
/// - a connection attempt that fails (before the server's SETTINGS) starts an
///   exponential backoff with jitter; when no other connection is alive, the
///   waiting requests fail with that attempt's error (`.connectFailed`,
///   `.tlsFailed`), and until the backoff ends every new request fails at once
///   with `.allConnectionsDown` (no connection is tried during it);
///   the first request after it tries again. A connection reaching ready
///   resets the backoff;
/// - resent (never twice processed): requests refused with REFUSED_STREAM,
///   above a GOAWAY's last-stream-id, or whose frames had not been handed to
///   OpenSSL when their connection died. Any other failure of a request on
///   a stream completes it with `.streamFailed`.
final class APNsPool: APNsConnectionOwner {
    let environment: APNsEnvironment
    private let loop: EventLoop
    private let endpoint: APNsEndpoint
    private let limits: APNsPoolLimits
    /// APNs answered 403 (credentials refused): status, reason.
    var onCredentialRejection: ((Int, APNsReason?) -> Void)?

    private(set) var connections: [APNsConnection] = []
    private var queue = RequestQueue()
    /// Every request from `send` to its completion, for the answer timeout.
    private(set) var deadlines = AnswerDeadlines()
    /// Set for the front of `deadlines` or earlier, whenever it is not empty.
    private var deadlineTimer: TimerID?
    private let answerTimeoutNanoseconds: UInt64
    /// Requests handed back unprocessed: they go before the queue.
    private var resendQueue = RequestQueue()
    private(set) var queuedCount = 0
    private(set) var inFlightCount = 0
    /// When `send` last ran (loop nanoseconds): the client closes a pool
    /// idle for its idle timeout.
    private(set) var lastSend: UInt64 = 0

    private var consecutiveFailures = 0
    private var backoffUntil: UInt64 = 0
    private var backoffTimer: TimerID?
    private(set) var lastConnectFailure: ConnectionFailure?
    /// The last ready connection that died (EOF, reset, PING timeout…).
    private(set) var lastConnectionLoss: ConnectionFailure?
    private var dispatchScheduled = false
    private var shutdownCompletion: (() -> Void)?
    private(set) var isShuttingDown = false

    private(set) var counters = APNsCounters()
    /// The latest answer about our credentials was 403 (a 200 clears it).
    private(set) var credentialsRejected = false

    /// A request refused this often (REFUSED_STREAM, GOAWAY) fails instead.
    static let maxResends = 10

    init(environment: APNsEnvironment, loop: EventLoop, endpoint: APNsEndpoint, limits: APNsPoolLimits) {
        self.environment = environment
        self.loop = loop
        self.endpoint = endpoint
        self.limits = limits
        answerTimeoutNanoseconds = limits.answerTimeout.saturatingNanoseconds
    }

    // MARK: Sending

    func send(_ request: PooledNotification) {
        counters.sent += 1
        lastSend = loop.now
        if isShuttingDown { return failLater(request, .allConnectionsDown) }
        if queuedCount == 0, let connection = connection(taking: request) {
            switch connection.submit(request) {
            case .submitted:
                inFlightCount += 1
                trackAnswerDeadline(request)
                return
            case .unsendable(let reason):
                return failLater(request, .streamFailed("request not sendable over HTTP/2: \(reason)"))
            case .refused:
                break
            }
        }
        if !hasLiveConnection && loop.now < backoffUntil { return failLater(request, .allConnectionsDown) }
        if queuedCount >= limits.maxQueued { return failLater(request, .overloaded) }
        trackAnswerDeadline(request)
        queue.append(request)
        queuedCount += 1
        openConnectionIfNeeded()
    }

    /// `completion` must never run inside `send`: the next loop pass.
    private func failLater(_ request: PooledNotification, _ outcome: DeliveryOutcome) {
        loop.schedule(after: .zero) { [weak self] in
            self?.finish(request, APNsDelivery(outcome: outcome))
        }
    }

    private func trackAnswerDeadline(_ request: PooledNotification) {
        // Measured from `send`: the relay must answer before Mastodon gives up.
        let (deadline, overflow) = loop.now.addingReportingOverflow(answerTimeoutNanoseconds)
        request.answerDeadline = overflow ? .max : deadline
        deadlines.append(request)
        if deadlineTimer == nil, let first = deadlines.first { armDeadlineTimer(at: first.answerDeadline) }
    }

    private func armDeadlineTimer(at deadline: UInt64) {
        deadlineTimer = loop.schedule(atNanoseconds: deadline) { [weak self] in
            guard let self else { return }
            self.deadlineTimer = nil
            self.expireAnswerDeadlines()
        }
    }

    /// Times out, in send order, every request whose deadline has passed,
    /// then sets the timer for the next one.
    private func expireAnswerDeadlines() {
        while let first = deadlines.first, first.answerDeadline <= loop.now {
            _ = deadlines.popFirst()
            answerTimedOut(first)
        }
        // A completion above may have sent (and armed) already.
        if deadlineTimer == nil, let first = deadlines.first { armDeadlineTimer(at: first.answerDeadline) }
    }

    private func answerTimedOut(_ request: PooledNotification) {
        switch request.phase {
        case .queued:
            queuedCount -= 1
        case .inFlight(let connection, let streamID):
            inFlightCount -= 1
            request.phase = .finished
            connection.cancel(streamID: streamID)
        case .finished:
            return
        }
        counters.answerTimeouts += 1
        finish(request, APNsDelivery(outcome: .answerTimedOut))
    }

    private func finish(_ request: PooledNotification, _ delivery: APNsDelivery) {
        guard !request.isCompleted else { return }
        request.isCompleted = true
        request.phase = .finished
        deadlines.remove(request)
        counters.completed += 1
        if let verdict = delivery.outcome.credentialVerdict {
            credentialsRejected = verdict == .rejected
        }
        if delivery.outcome.credentialVerdict == .rejected, case .apns(let status, let reason, _) = delivery.outcome {
            onCredentialRejection?(status, reason)
            if reason == .expiredProviderToken || reason == .invalidProviderToken,
               let provider = endpoint.tokenProvider, let issuedAt = request.tokenIssuedAt {
                provider.tokenRejected(issuedAt: issuedAt, now: endpoint.wallClock())
            }
        }
        request.complete(delivery)
    }

    // MARK: Connections

    private var hasLiveConnection: Bool {
        connections.contains { $0.state < .draining }
    }

    private func connection(taking request: PooledNotification) -> APNsConnection? {
        let bodyBytes = request.notification.payload.count
        for connection in connections where connection.canTake(bodyBytes: bodyBytes) {
            return connection
        }
        return nil
    }

    private func dispatch() {
        dispatchScheduled = false
        while queuedCount > 0 {
            // In order: a request that fits nowhere yet waits, and so do those behind it.
            guard let next = resendQueue.peekFirst() ?? queue.peekFirst(),
                  let connection = connection(taking: next),
                  let request = resendQueue.popFirst() ?? queue.popFirst() else { break }
            queuedCount -= 1
            switch connection.submit(request) {
            case .submitted:
                inFlightCount += 1
            case .unsendable(let reason):
                finish(request, APNsDelivery(outcome: .streamFailed("request not sendable over HTTP/2: \(reason)")))
            case .refused:
                // Put it back first in line and stop: a session that
                // refuses while showing capacity would spin here.
                var front = RequestQueue()
                front.append(request)
                while let other = resendQueue.popFirst() { front.append(other) }
                resendQueue = front
                queuedCount += 1
                scheduleDispatch()
                return openConnectionIfNeeded()
            }
        }
        openConnectionIfNeeded()
        checkShutdownDone()
    }

    private func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        loop.schedule(after: .zero) { [weak self] in self?.dispatch() }
    }

    private func openConnectionIfNeeded() {
        guard !isShuttingDown, queuedCount > 0 else { return }
        guard !connections.contains(where: { $0.state < .ready }) else { return }
        guard connections.count(where: { $0.state <= .ready }) < limits.maxConnections else { return }
        if loop.now < backoffUntil {
            if backoffTimer == nil {
                backoffTimer = loop.schedule(atNanoseconds: backoffUntil) { [weak self] in
                    self?.backoffTimer = nil
                    self?.openConnectionIfNeeded()
                }
            }
            return
        }
        let connection = APNsConnection(loop: loop, endpoint: endpoint, owner: self)
        connections.append(connection)
        counters.connectionsOpened += 1
        connection.start()
    }

    private func backoffDelay() -> UInt64 {
        let base = Double(limits.backoffBase.saturatingNanoseconds)
        let cap = Double(limits.backoffCap.saturatingNanoseconds)
        let exponent = Double(min(consecutiveFailures - 1, 30))
        let delay = min(cap, base * pow2(exponent))
        // "Equal jitter": half fixed, half random, so reconnects of many
        // loops and relays spread out but never come back at once.
        return UInt64(delay / 2 + Double.random(in: 0...(delay / 2)))
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        var count = Int(exponent)
        while count > 0 {
            value *= 2
            count -= 1
        }
        return value
    }

    // MARK: APNsConnectionOwner

    func connectionHasCapacity(_ connection: APNsConnection) {
        if connection.state == .ready {
            consecutiveFailures = 0
            backoffUntil = 0
        }
        dispatch()
    }

    func connectionIsDraining(_ connection: APNsConnection) {
        counters.goAwaysReceived += 1
        scheduleDispatch()
    }

    func connectionSentPing(_ connection: APNsConnection) {
        counters.pingsSent += 1
    }

    func connection(_ connection: APNsConnection, finished request: PooledNotification, with delivery: APNsDelivery) {
        guard !request.isCompleted else { return }
        inFlightCount -= 1
        finish(request, delivery)
    }

    func connection(_ connection: APNsConnection, returnedUnprocessed requests: [PooledNotification]) {
        for request in requests where !request.isCompleted {
            inFlightCount -= 1
            request.resendCount += 1
            counters.resent += 1
            if request.resendCount > Self.maxResends || isShuttingDown {
                finish(request, APNsDelivery(outcome: .streamFailed(
                    isShuttingDown ? "refused by APNs during shutdown" : "refused by APNs \(request.resendCount) times")))
                continue
            }
            request.phase = .queued
            resendQueue.append(request)
            queuedCount += 1
        }
        scheduleDispatch()
    }

    func connectionDidClose(_ connection: APNsConnection, failure: ConnectionFailure?, wasReady: Bool) {
        connections.removeAll { $0 === connection }
        if let failure, !wasReady {
            counters.connectFailures += 1
            lastConnectFailure = failure
            consecutiveFailures += 1
            backoffUntil = loop.now &+ backoffDelay()
            if !hasLiveConnection { failQueued(failure.outcomeForWaitingRequest) }
        } else if let failure {
            counters.connectionsLost += 1
            lastConnectionLoss = failure
        }
        if isShuttingDown {
            failQueued(.allConnectionsDown)
            checkShutdownDone()
        } else {
            scheduleDispatch()
        }
    }

    private func failQueued(_ outcome: DeliveryOutcome) {
        while let request = resendQueue.popFirst() ?? queue.popFirst() {
            queuedCount -= 1
            finish(request, APNsDelivery(outcome: outcome))
        }
    }

    // MARK: Shutdown

    /// Sends what fits, fails what still waits, sends GOAWAY on every
    /// connection, lets open streams finish (bounded by the answer timeout),
    /// then calls `done`.
    func shutdown(_ done: @escaping () -> Void) {
        if isShuttingDown {
            // Already under way: chain `done` after the first completion.
            let previous = shutdownCompletion
            shutdownCompletion = {
                previous?()
                done()
            }
            return checkShutdownDone()
        }
        dispatch()
        isShuttingDown = true
        shutdownCompletion = done
        if let backoffTimer { loop.cancel(backoffTimer) }
        backoffTimer = nil
        failQueued(.allConnectionsDown)
        for connection in connections { connection.drain() }
        checkShutdownDone()
    }

    private func checkShutdownDone() {
        guard isShuttingDown, connections.isEmpty, inFlightCount == 0, let done = shutdownCompletion else { return }
        shutdownCompletion = nil
        // Nothing is left to time out (every request has completed).
        if let deadlineTimer { loop.cancel(deadlineTimer) }
        deadlineTimer = nil
        done()
    }

    // MARK: State

    func connectionCounts(into counts: inout [APNsConnectionState: Int]) {
        for connection in connections { counts[connection.state, default: 0] += 1 }
    }
}
