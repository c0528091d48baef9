import Dispatch
import EventLoop
import Glibc
import HTTP2
import RelayCore
import Locking
import Synchronization
import TLS

/// Errors of the emulator's own setup.
public enum APNsEmulatorError: Error, Sendable, CustomStringConvertible {
    case credentials(CredentialError)
    /// A provider key that cannot be used (unreadable, not EC P-256).
    case providerKey(keyID: String, CredentialError)
    case tls(TLSError)
    case socket(SocketError)
    case eventLoop(EventLoopError)
    case invalidConfiguration(String)
    case alreadyStarted

    public var description: String {
        switch self {
        case .credentials(let error): "APNs emulator credentials: \(error)"
        case .providerKey(let keyID, let error): "APNs emulator provider key \(keyID): \(error)"
        case .tls(let error): "APNs emulator TLS: \(error)"
        case .socket(let error): "APNs emulator listener: \(error)"
        case .eventLoop(let error): "APNs emulator: \(error)"
        case .invalidConfiguration(let reason): "APNs emulator configuration: \(reason)"
        case .alreadyStarted: "APNs emulator already started"
        }
    }
}

/// Counters since start (or the last `reset()`); a consistent-enough snapshot
/// (each value read atomically, not all at one instant).
public struct APNsEmulatorStatistics: Sendable, Hashable {
    /// Complete requests received (every outcome).
    public var received: Int
    /// Answered 200.
    public var accepted: Int
    /// Answered with an error status (validation, fault token, forced).
    public var rejected: Int
    /// Deliberately left unanswered (fault token or forced `.noAnswer`).
    public var unanswered: Int
    /// Streams reset instead of answered.
    public var resetStreams: Int
    /// Connections dropped on purpose (fault token, forced, dropAfterStreams).
    public var droppedConnections: Int
    /// 200s for an apns-id that had already been answered 200: a client
    /// that resent a notification APNs had accepted (a ledger error).
    public var duplicateAPNsIDs: Int
    /// TCP connections accepted.
    public var connections: Int
    /// Connections open now.
    public var openConnections: Int
    /// TLS handshakes that failed (no or wrong client certificate, no h2…).
    public var handshakeFailures: Int
}

/// Shared by the loop threads: configuration, counters, behaviour, records.
final class EmulatorState: Sendable {
    let configuration: APNsEmulatorConfiguration
    let tlsContext: TLSContext
    /// Token authentication's keys (empty without it).
    let providerKeys: [LoadedProviderKey]

    let received = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let unanswered = Atomic<Int>(0)
    let resetStreams = Atomic<Int>(0)
    let droppedConnections = Atomic<Int>(0)
    let duplicates = Atomic<Int>(0)
    let connections = Atomic<Int>(0)
    let openConnections = Atomic<Int>(0)
    let handshakeFailures = Atomic<Int>(0)

    /// The behaviour and a version the loops compare against their cached
    /// copy, so the hot path reads one atomic instead of taking a lock.
    let behavior: Locked<APNsEmulatorBehavior>
    let behaviorVersion = Atomic<UInt64>(0)
    /// Requests left for a counted forced action.
    let forcedRemaining = Atomic<Int>(0)

    /// apns-ids answered 200 (client-chosen ones only: generated ids are unique).
    let ledger = Locked<Set<UUIDKey>>([])
    let records = Locked<[ReceivedNotification]>([])
    let observer = Locked<(@Sendable (ReceivedNotification) -> Void)?>(nil)
    let hasObserver = Atomic<Bool>(false)

    init(configuration: APNsEmulatorConfiguration) throws(APNsEmulatorError) {
        self.configuration = configuration
        guard configuration.threads >= 1 else { throw .invalidConfiguration("threads must be at least 1") }
        let identity: TLSIdentity
        do {
            identity = try TLSIdentity.pem(certificateFile: configuration.certificateFile,
                                           privateKeyFile: configuration.privateKeyFile)
        } catch { throw .credentials(error) }
        var clientCAFile: String?
        var keys: [LoadedProviderKey] = []
        switch configuration.authentication {
        case .clientCertificate(let caFile): clientCAFile = caFile
        case .providerKeys(let configured): keys = try LoadedProviderKey.load(configured)
        case .clientCertificateOrProviderKeys(let caFile, let configured):
            clientCAFile = caFile
            keys = try LoadedProviderKey.load(configured)
        case .none: break
        }
        do {
            tlsContext = try TLSContext.server(identity: identity, alpn: ["h2"], clientCAFile: clientCAFile,
                                               requireClientCertificate: keys.isEmpty)
        } catch { throw .tls(error) }
        providerKeys = keys
        behavior = Locked(configuration.behavior)
        forcedRemaining.store(configuration.behavior.forcedCount ?? 0, ordering: .relaxed)
    }

    /// Claims one use of a counted forced action; always true when uncounted.
    func claimForced(_ behavior: APNsEmulatorBehavior) -> Bool {
        guard behavior.forcedCount != nil else { return true }
        var current = forcedRemaining.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = forcedRemaining.compareExchange(
                expected: current, desired: current - 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func log(_ message: String) {
        guard configuration.log else { return }
        var line = Array("apns-emulator: \(message)\n".utf8)
        _ = line.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}

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
    private let state: EmulatorState

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
            + "checking \(configuration.authentication.checks)")
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
        setBehavior(configuration.behavior)
    }

    /// Called with each accepted notification, on a loop thread.
    public var onNotification: (@Sendable (ReceivedNotification) -> Void)? {
        get { state.observer.withLock { $0 } }
        set {
            state.observer.withLock { $0 = newValue }
            state.hasObserver.store(newValue != nil, ordering: .releasing)
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
