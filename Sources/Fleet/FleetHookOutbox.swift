import EventLoop
import Feedback
import FeedbackHook
import Glibc
import Locking
import Observability
import Redis

/// The feedback hook's posts in a fleet: each failed-push log is written to
/// the fleet's hook stream (`FleetKeys.hookStream`), and every instance
/// with the hook reads that stream in the consumer group and posts what it
/// reads through its own `FeedbackHook`. A post is acknowledged once the
/// hook answered 2xx, or refused it for good (a 4xx: posting again would
/// get the same answer); one not posted (the hook down through every
/// attempt, a full local queue, shutdown) is released and taken over after
/// `REDIS_CLAIM_IDLE`, by any instance. So each log is posted at least
/// once, more than once only when an instance dies between the post and
/// its acknowledgement.
///
/// `post` never waits: the log joins a bounded local buffer
/// (`FEEDBACK_HOOK_QUEUE`), which one writer on the commands link's
/// thread moves to Redis in batches; while Redis cannot take them they
/// wait there (retried every second), and past the bound they are dropped
/// and counted, as the hook's own queue drops.
public final class FleetHookOutbox: HookOutbox, Sendable {
    private let queue: StreamQueue
    private let handOff: HookHandOff
    private let loop: EventLoop
    private let capacity: Int
    private let logger: Logger
    private let state = Locked(State())

    private struct State {
        /// Logs not yet in Redis, oldest first.
        var buffer: [[UInt8]] = []
        var writing = false
        var dropped = 0
        /// The last write failed: said once until one succeeds.
        var failing = false
    }

    /// Logs one write moves at most.
    static let batch = 256

    /// - Parameters:
    ///   - capacity: logs waiting for Redis at most (`FEEDBACK_HOOK_QUEUE`);
    ///     also the fleet's stream bound, so a hook that is down for long
    ///     holds as many logs in Redis as one instance's queue would.
    public init(fleet: Fleet, hook: FeedbackHook, capacity: Int, logger: Logger) {
        precondition(capacity >= 1)
        let handOff = HookHandOff(hook: hook, logger: logger)
        queue = StreamQueue(fleet: fleet, stream: FleetKeys.hookStream, maxPending: capacity,
                            capacity: min(capacity, 1024), logger: logger) { entries, _ in handOff.receive(entries) }
        handOff.attach(queue)
        self.handOff = handOff
        loop = fleet.commands.loop
        self.capacity = capacity
        self.logger = logger
    }

    /// Starts reading the stream (once).
    public func start() {
        queue.start()
    }

    /// Logs waiting for Redis now.
    public var unwritten: Int { state.withLock { $0.buffer.count } }

    /// Logs dropped because `capacity` were waiting for Redis.
    public var dropped: Int { state.withLock { $0.dropped } }

    /// Logs taken over from other instances (or from this one after a
    /// post that could not be made).
    public var claimed: Int { queue.claimed }

    public func post(_ body: [UInt8]) {
        let startWriter = state.withLock { state -> Bool in
            guard state.buffer.count < capacity else {
                state.dropped += 1
                return false
            }
            state.buffer.append(body)
            guard !state.writing else { return false }
            state.writing = true
            return true
        }
        if startWriter { loop.execute { [self] in writeBatch() } }
    }

    /// Shutdown: stops reading; waits (at most `within`) for the logs still
    /// buffered to reach Redis, and returns how many did not.
    public func stop(within: Duration) -> Int {
        queue.stop()
        let deadline = ContinuousClock.now + within
        while unwritten > 0 && ContinuousClock.now < deadline { usleep(5_000) }
        return unwritten
    }

    /// Waits (at most `timeout`) until the acknowledgements sent are
    /// answered, before the links close.
    public func waitForAcknowledgements(timeout: Duration) {
        queue.waitForAcknowledgements(timeout: timeout)
    }

    /// Moves the oldest buffered logs to Redis, then the next ones; on the
    /// commands link's thread, one write at a time.
    private func writeBatch() {
        let batch: [[UInt8]]? = state.withLock { state in
            guard !state.buffer.isEmpty else {
                state.writing = false
                return nil
            }
            return Array(state.buffer.prefix(Self.batch))
        }
        guard let batch else { return }
        let entries = batch.map { [(name: HookHandOff.bodyField, value: $0)] }
        queue.add(entries) { [self] result in
            switch result {
            case .added:
                let recovered = state.withLock { state in
                    // Only this writer removes, and only from the front.
                    state.buffer.removeFirst(batch.count)
                    defer { state.failing = false }
                    return state.failing
                }
                if recovered { logger.warning("feedback hook: writing to Redis again") }
                writeBatch()
            case .full, .failed:
                let first = state.withLock { state in
                    defer { state.failing = true }
                    return !state.failing
                }
                if first {
                    let why = if case .failed(let error) = result { "\(error)" } else {
                        "the fleet's hook stream holds \(queue.maxPending) logs already"
                    }
                    logger.warning("feedback hook: cannot write to Redis (\(why)); the logs wait here, tried every second")
                }
                loop.schedule(after: .seconds(1)) { [self] in writeBatch() }
            }
        }
    }
}

/// The reading side: each entry read is handed to this instance's hook,
/// and finished by how its post ended.
final class HookHandOff: Sendable {
    static let bodyField = Array("body".utf8)

    private let hook: FeedbackHook
    private let logger: Logger
    private let queue = Locked<StreamQueue?>(nil)

    init(hook: FeedbackHook, logger: Logger) {
        self.hook = hook
        self.logger = logger
    }

    func attach(_ queue: StreamQueue) {
        self.queue.withLock { $0 = queue }
    }

    func receive(_ entries: [StreamEntry]) {
        guard let queue = queue.withLock({ $0 }) else { return }
        for entry in entries {
            let id = entry.id
            guard let body = entry.value("body") else {
                // Not a log the relay wrote: dropped, never posted.
                logger.warning("feedback hook: stream entry \(id) has no body; dropped")
                queue.done(id)
                continue
            }
            let queued = hook.enqueue(body) { outcome in
                switch outcome {
                case .delivered, .refused: queue.done(id)
                case .notPosted: queue.release(id)
                }
            }
            if !queued { queue.release(id) }
        }
    }
}
