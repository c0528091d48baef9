import Dispatch
import EventLoop
import Glibc
import HTTP2
import Locking
import Synchronization
import TLS

/// Makes a value cross to a loop thread that alone will use it.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
}

/// An APNs-compatible HTTP/2 server (TLS, ALPN h2) for tests, the benchmark
/// and the relay's demo mode. See `APNsRequestValidator` for the rules it
/// enforces and `APNsFaultToken` for fault injection by device token.
///
/// Thread-safe. Callbacks (`onNotification`) run on loop threads and must not
/// call `stop()`.
public final class APNsEmulator: Sendable {
    public let configuration: APNsEmulatorConfiguration
    let state: EmulatorState

    private struct Runtime {
        var threads: [EventLoopThread]
        var workers: [UncheckedBox<EmulatorWorker>]
    }

    private let runtime = Locked<Runtime?>(nil)
    private let boundPort = Atomic<UInt16>(0)

    /// Loads the certificate, key and (for token auth) public key; nothing
    /// listens before `start()`.
    public init(configuration: APNsEmulatorConfiguration) throws(APNsEmulatorError) {
        self.configuration = configuration
        state = try EmulatorState(configuration: configuration)
    }

    deinit {
        stop()
    }

    /// Binds and starts the loop threads; returns once every listener accepts.
    public func start() throws(APNsEmulatorError) {
        let started = runtime.withLock { $0 != nil }
        guard !started else { throw .alreadyStarted }
        let count = configuration.threads
        var listeners: [Socket] = []
        do {
            let first = try Socket.listen(host: configuration.host, port: configuration.port, reusePort: count > 1,
                                          backlog: 1024)
            listeners.append(first)
            for _ in 1..<count {
                listeners.append(try Socket.listen(host: configuration.host, port: first.localPort, reusePort: true,
                                                   backlog: 1024))
            }
        } catch { throw .socket(error) }
        let port = listeners[0].localPort

        var threads: [EventLoopThread] = []
        var workers: [UncheckedBox<EmulatorWorker>] = []
        for (index, listener) in listeners.enumerated() {
            let thread: EventLoopThread
            do { thread = try EventLoopThread(name: "apns-emu-\(index)") } catch {
                Self.shutdown(threads: threads, workers: workers)
                throw .eventLoop(error)
            }
            threads.append(thread)
            let loop = thread.loop
            let outcome = Locked<Result<UncheckedBox<EmulatorWorker>, EventLoopError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let box = UncheckedBox(value: listener)
            let state = self.state
            loop.execute {
                do throws(EventLoopError) {
                    let worker = try EmulatorWorker(loop: loop, state: state, listener: box.value)
                    outcome.withLock { $0 = .success(UncheckedBox(value: worker)) }
                } catch {
                    outcome.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            done.wait()
            switch outcome.withLock({ $0 }) {
            case .success(let worker): workers.append(worker)
            case .failure(let error):
                Self.shutdown(threads: threads, workers: workers)
                throw .eventLoop(error)
            case nil:
                Self.shutdown(threads: threads, workers: workers)
                throw .invalidConfiguration("loop thread did not start")
            }
        }
        boundPort.store(port, ordering: .releasing)
        runtime.withLock { $0 = Runtime(threads: threads, workers: workers) }
        state.log("listening on \(configuration.host):\(port) with \(count) thread(s) as APNs \(configuration.environment.rawValue), "
            + "checking \(configuration.authentication.checks)"
            + (state.tokenUpdates.map { ", a key's new token at most every \($0.interval) s" } ?? "")
            + (state.fcm.map { ", and as FCM for \($0.accounts.count) service account(s)" } ?? ""))
    }

    /// The listening port (0 before `start()`).
    public var port: UInt16 { boundPort.load(ordering: .acquiring) }

    /// Closes the listeners and every connection, then joins the threads.
    /// Idempotent.
    public func stop() {
        guard let current = runtime.withLock({ runtime -> Runtime? in
            defer { runtime = nil }
            return runtime
        }) else { return }
        Self.shutdown(threads: current.threads, workers: current.workers)
    }

    private static func shutdown(threads: [EventLoopThread], workers: [UncheckedBox<EmulatorWorker>]) {
        for (thread, worker) in zip(threads, workers) {
            let done = DispatchSemaphore(value: 0)
            thread.loop.execute {
                worker.value.shutdown()
                done.signal()
            }
            done.wait()
        }
        for thread in threads { thread.stopAndJoin() }
    }

    // MARK: statistics and records

    public var statistics: APNsEmulatorStatistics {
        APNsEmulatorStatistics(
            received: state.received.load(ordering: .relaxed),
            accepted: state.accepted.load(ordering: .relaxed),
            rejected: state.rejected.load(ordering: .relaxed),
            unanswered: state.unanswered.load(ordering: .relaxed),
            resetStreams: state.resetStreams.load(ordering: .relaxed),
            droppedConnections: state.droppedConnections.load(ordering: .relaxed),
            duplicateAPNsIDs: state.duplicates.load(ordering: .relaxed),
            connections: state.connections.load(ordering: .relaxed),
            openConnections: state.openConnections.load(ordering: .relaxed),
            handshakeFailures: state.handshakeFailures.load(ordering: .relaxed))
    }

    public var acceptedCount: Int { state.accepted.load(ordering: .relaxed) }
    public var rejectedCount: Int { state.rejected.load(ordering: .relaxed) }
    public var connectionCount: Int { state.connections.load(ordering: .relaxed) }
    public var duplicateAPNsIDs: Int { state.duplicates.load(ordering: .relaxed) }

    /// The accepted notifications so far (only with `recordNotifications`).
    public func receivedNotifications() -> [ReceivedNotification] {
        state.records.withLock { $0 }
    }

    /// Zeroes the counters (open connections excepted), forgets the records
    /// and the apns-id ledger, and restores the configured behaviour.
    public func reset() {
        state.received.store(0, ordering: .relaxed)
        state.accepted.store(0, ordering: .relaxed)
        state.rejected.store(0, ordering: .relaxed)
        state.unanswered.store(0, ordering: .relaxed)
        state.resetStreams.store(0, ordering: .relaxed)
        state.droppedConnections.store(0, ordering: .relaxed)
        state.duplicates.store(0, ordering: .relaxed)
        state.connections.store(0, ordering: .relaxed)
        state.handshakeFailures.store(0, ordering: .relaxed)
        state.records.withLock { $0.removeAll() }
        state.ledger.withLock { $0.removeAll() }
        state.fcm?.reset()
        state.broadcasts.withLock { $0.removeAll() }
        state.channels.removeAll()
        setBehavior(configuration.behavior)
    }

    /// Called with each accepted notification, on a loop thread.
    public var onNotification: (@Sendable (ReceivedNotification) -> Void)? {
        get { state.observer.withLock { $0.call } }
        set {
            state.observer.withLock { $0.call = newValue }
            state.hasObserver.store(newValue != nil, ordering: .releasing)
        }
    }

    // MARK: FCM

    /// The FCM side's counters (all zero when the emulator plays APNs only).
    public var fcmStatistics: FCMEmulatorStatistics {
        state.fcm?.statistics ?? FCMEmulatorStatistics(tokenRequests: 0, tokensIssued: 0, tokenRefusals: 0, received: 0,
                                                        accepted: 0, rejected: 0, unanswered: 0)
    }

    /// The accepted FCM messages so far (only with `recordMessages`).
    public func receivedFCMMessages() -> [FCMReceivedMessage] {
        state.fcm?.records.withLock { $0 } ?? []
    }

    /// Called with each accepted FCM message, on a loop thread.
    public var onFCMMessage: (@Sendable (FCMReceivedMessage) -> Void)? {
        get { state.fcm?.observer.withLock { $0.call } }
        set {
            guard let fcm = state.fcm else { return }
            fcm.observer.withLock { $0.call = newValue }
            fcm.hasObserver.store(newValue != nil, ordering: .releasing)
        }
    }

    // MARK: behaviour

    public var behavior: APNsEmulatorBehavior { state.behavior.withLock { $0 } }

    public func setBehavior(_ behavior: APNsEmulatorBehavior) {
        update { $0 = behavior }
    }

    /// Changes the behaviour atomically. A new `forcedCount` (or forced
    /// action) restarts the count; a new `maxConcurrentStreams` is announced
    /// to every live connection.
    public func update(_ body: (inout APNsEmulatorBehavior) -> Void) {
        let (old, new) = state.behavior.withLock { behavior -> (APNsEmulatorBehavior, APNsEmulatorBehavior) in
            let old = behavior
            body(&behavior)
            if behavior.forcedAction != old.forcedAction || behavior.forcedCount != old.forcedCount {
                state.forcedRemaining.store(behavior.forcedCount ?? 0, ordering: .relaxed)
            }
            state.behaviorVersion.wrappingAdd(1, ordering: .releasing)
            return (old, behavior)
        }
        guard new.maxConcurrentStreams != old.maxConcurrentStreams else { return }
        let value = new.maxConcurrentStreams
        let workers = runtime.withLock { $0?.workers ?? [] }
        for worker in workers {
            worker.value.loop.execute { worker.value.announce(maxConcurrentStreams: value) }
        }
    }
}
