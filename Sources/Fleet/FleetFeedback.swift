import Dispatch
import EventLoop
import Feedback
import Glibc
import Observability
import Redis
import Synchronization

/// The fleet's feedback lists (`REDIS_URL`): one list per app in Redis,
/// `FleetKeys.feedback(app:)`, capped at `FEEDBACK_MAX`, which a pull on any
/// instance returns and clears.
///
/// Recording is untouched: every path still records into this instance's
/// `FeedbackStore` (one lock, O(1)), the bounded local buffer; nothing on
/// a request path waits for Redis. A flusher on the commands link's thread
/// polls the store every `tick` (a record costs nothing more; an idle
/// relay's round is one lock and an empty dictionary scan) and writes what
/// it holds, one batch per app, with `writeScript`: append, then trim to the
/// newest `FEEDBACK_MAX`, counting what the trim dropped. While Redis is
/// unreachable the entries stay in the store (the oldest dropped and
/// counted past `FEEDBACK_MAX`, as without a fleet) and are written once it
/// is back. A batch whose reply was lost may have been written: it is sent
/// again under the same sequence, which the script skips once seen, so it
/// lands in Redis once (`FeedbackFlushMachine`).
///
/// A pull first writes this instance's entries (on the same connection,
/// before the take, so Redis runs them in that order), then takes the
/// list with `LPOP key count`, one atomic command: two pulls, on one
/// instance or several, never get one entry twice and never lose one;
/// entries this instance recorded meanwhile, never sent, join the answer.
/// With Redis unreachable (the command timeout, 5 s), a pull answers what
/// this instance holds and has not sent, and says so
/// (`FeedbackPull.redisFailure`). A take whose reply is lost (the
/// connection dropped after Redis ran it) loses what it took, as an
/// answer lost on its way to the caller would.
public final class FleetFeedback: SharedFeedbackList {
    public let store: FeedbackStore
    public let link: RedisLink
    /// The hash of this instance's last written batch per app (the write
    /// script's memory of sequences).
    public let writtenKey: String
    private let tick: Duration
    private let logger: Logger
    private let state: LoopConfined<Box>
    /// The entries of batches out (`FeedbackFlushMachine.entriesOut`),
    /// for the metrics thread: added under the store's lock as they leave
    /// it, so `unflushed` never reads 0 while a batch is on its way.
    private let entriesOut = Atomic<Int>(0)

    /// A batch holds at most this many entries (about 1 MB on the wire):
    /// a ring of FEEDBACK_MAX's largest setting goes in several.
    public static let batchLimit = 10_000
    /// A pull takes the list in chunks of this many (about 1 MB a reply),
    /// far inside `RedisReplyLimits`, up to FEEDBACK_MAX in all.
    public static let takeChunk = 10_000

    private final class Box {
        var machine = FeedbackFlushMachine()
        var timer: TimerID?
        var stopped = false
    }

    /// `logger`: where its warnings go (never a token). Call `start()` to begin the
    /// flusher's rounds.
    public init(store: FeedbackStore, link: RedisLink, instance: String, tick: Duration = .milliseconds(100),
                logger: Logger) {
        self.store = store
        self.link = link
        self.tick = tick
        self.logger = logger
        writtenKey = FleetKeys.feedbackWritten(instance: instance)
        state = LoopConfined(Box())
    }

    /// Entries waiting for Redis: held by the store and in batches sent
    /// and not yet confirmed.
    public var unflushed: Int { store.heldCount + entriesOut.load(ordering: .relaxed) }

    /// Starts the flusher's rounds on the link's thread.
    public func start() {
        link.loop.execute { [self] in self.scheduleRound() }
    }

    /// Ends the rounds (before the link closes). From any thread but the
    /// link's; returns once no round runs.
    public func stop() {
        let stopped = DispatchSemaphore(value: 0)
        link.loop.execute { [self] in
            let box = self.state.value
            box.stopped = true
            if let timer = box.timer { self.link.loop.cancel(timer) }
            box.timer = nil
            stopped.signal()
        }
        stopped.wait()
    }

    /// Shutdown: `flush`, then `stop`.
    public func finish(within: Duration) -> Int {
        let left = flush(within: within)
        stop()
        return left
    }

    /// One round now, then waits up to `within` for every entry to be
    /// written. Returns how many were not.
    public func flush(within: Duration) -> Int {
        link.loop.execute { [self] in self.round(force: true) }
        let clock = ContinuousClock()
        let deadline = clock.now + within
        while unflushed > 0, clock.now < deadline {
            // A failed batch waits for its retry delay; the timer's rounds
            // send it again while this waits.
            usleep(10_000)
        }
        return unflushed
    }

    /// Takes and clears the fleet's entries of `app`, after writing this
    /// instance's; `completion` runs on the link's thread. With the link
    /// down, the take waits for it up to the command timeout (a reconnect
    /// in that time still gives the fleet's entries), then answers this
    /// instance's.
    public func pull(app: String, completion: @escaping @Sendable (FeedbackPull) -> Void) {
        link.loop.execute { [self] in
            self.round(force: true)
            self.takeChunks(app: app, taken: [], completion: completion)
        }
    }

    // MARK: on the link's thread

    private func scheduleRound() {
        let box = state.value
        guard !box.stopped else { return }
        box.timer = link.loop.schedule(after: tick) { [self] in
            self.round(force: false)
            self.scheduleRound()
        }
    }

    private func round(force: Bool) {
        var actions: [FeedbackFlushMachine.Action] = []
        state.value.machine.round(now: .now, connected: link.isConnected, force: force, into: &actions)
        perform(actions)
    }

    private func perform(_ actions: [FeedbackFlushMachine.Action]) {
        let box = state.value
        for action in actions {
            switch action {
            case .send(let batch):
                send(batch)
            case .take(let skipping):
                var more: [FeedbackFlushMachine.Action] = []
                for app in store.appsHolding() where !skipping.contains(app) {
                    let entries = store.take(app: app, limit: Self.batchLimit) { count in
                        self.entriesOut.add(count, ordering: .relaxed)
                    }
                    box.machine.taken(app: app, entries: entries, into: &more)
                }
                perform(more)
            case .countDropped(let app, let count):
                store.countDropped(count, app: app)
            case .logFailure(let app, let entries, let error):
                logger.warning("feedback: \(entries) entries of app \(app) not written to Redis yet (\(error)); "
                    + "kept here and sent again")
            case .logRecovered(let app, let entries, let failures):
                logger.warning("feedback: \(entries) entries of app \(app) written to Redis after \(failures) failed tries")
            }
        }
    }

    private func send(_ batch: FeedbackBatch) {
        var arguments: [[UInt8]] = [Array("EVAL".utf8), Array(Self.writeScript.utf8), Array("2".utf8),
                                    Array(FleetKeys.feedback(app: batch.app).utf8), Array(writtenKey.utf8),
                                    Array(batch.app.utf8), Array(String(batch.sequence).utf8),
                                    Array(String(store.maxPerApp).utf8), Array(String(Self.writtenTTLSeconds).utf8)]
        arguments.reserveCapacity(arguments.count + batch.entries.count)
        for entry in batch.entries { arguments.append(feedbackValue(entry)) }
        link.send(RedisCommand(arguments)) { [self] reply in
            var actions: [FeedbackFlushMachine.Action] = []
            switch reply {
            case .success(.integer(let dropped)):
                self.entriesOut.subtract(batch.entries.count, ordering: .relaxed)
                self.state.value.machine.written(app: batch.app, sequence: batch.sequence, dropped: max(0, Int(dropped)),
                                                 into: &actions)
            case .success(let other):
                self.state.value.machine.failed(app: batch.app, sequence: batch.sequence,
                                                error: "the write script answered \(other.kind)", now: .now, into: &actions)
            case .failure(let error):
                self.state.value.machine.failed(app: batch.app, sequence: batch.sequence, error: error.description,
                                                now: .now, into: &actions)
            }
            self.perform(actions)
        }
    }

    /// `LPOP key count` until the list is empty or FEEDBACK_MAX entries
    /// came: each an atomic take, so a concurrent pull gets other entries.
    private func takeChunks(app: String, taken: [FeedbackEntry], completion: @escaping @Sendable (FeedbackPull) -> Void) {
        let chunk = max(1, min(store.maxPerApp, Self.takeChunk))
        let key = FleetKeys.feedback(app: app)
        link.send(RedisCommand("LPOP", key, String(chunk))) { [self] reply in
            switch reply {
            case .success(.null):
                completion(FeedbackPull(entries: taken + self.store.take(app: app)))
            case .success(.array(let values)):
                var entries = taken
                var skipped: [FeedbackValueError: Int] = [:]
                for value in values {
                    guard let bytes = value.bytes else {
                        skipped[.notFiveFields, default: 0] += 1
                        continue
                    }
                    switch decodeFeedbackValue(bytes, app: app) {
                    case .success(let entry): entries.append(entry)
                    case .failure(let why): skipped[why, default: 0] += 1
                    }
                }
                for (why, count) in skipped.sorted(by: { $0.key.description < $1.key.description }) {
                    self.logger.warning("feedback: skipped \(count) value\(count == 1 ? "" : "s") in app \(app)'s list in Redis "
                        + "that \(count == 1 ? "is" : "are") not an entry: \(why)")
                }
                if values.count == chunk, entries.count + (skipped.values.reduce(0, +)) < max(store.maxPerApp, chunk) {
                    self.takeChunks(app: app, taken: entries, completion: completion)
                } else {
                    // And what this instance recorded since its round, or
                    // held while the link was down: never sent, so only
                    // this answer has them.
                    completion(FeedbackPull(entries: entries + self.store.take(app: app)))
                }
            case .success(let other):
                // A key of another type (`WRONGTYPE` is an error reply) or
                // an answer LPOP never gives: nothing taken.
                completion(FeedbackPull(entries: taken + self.store.take(app: app),
                                        redisFailure: "LPOP answered \(other.kind)"))
            case .failure(let error):
                // Entries already taken stay in the answer; this
                // instance's unsent ones join them. A batch sent by the
                // round above and failed stays for its retry: it may be in
                // Redis already.
                completion(FeedbackPull(entries: taken + self.store.take(app: app), redisFailure: error.description))
            }
        }
    }

    /// How long Redis keeps this instance's sequences after its last write:
    /// a lost reply's batch is sent again within seconds of Redis answering
    /// again, and an instance that stopped leaves one small hash behind
    /// for no longer than this.
    public static let writtenTTLSeconds = 86_400

    /// One batch, atomically, because two instances write and trim one
    /// list: a trim between another's append and its count would drop
    /// entries uncounted, and a sequence checked apart from its append could
    /// let a retried batch in twice. KEYS[1] the app's list, KEYS[2] this
    /// instance's sequences; ARGV: the app, the batch's sequence,
    /// FEEDBACK_MAX, the sequences' time to live, then the entries. Returns
    /// the entries trimmed off the list's old end (0 for a batch seen
    /// before). RPUSH in slices of 1,000: Lua's `unpack` has a stack limit
    /// (8,000 values in Redis' Lua). EVAL, not EVALSHA: the script is
    /// 600 bytes beside a batch's entries, and a restarted Redis that
    /// forgot its scripts needs no second round trip.
    public static let writeScript = """
        local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
        local sequence = tonumber(ARGV[2])
        if last >= sequence then return 0 end
        for first = 5, #ARGV, 1000 do
          redis.call('RPUSH', KEYS[1], unpack(ARGV, first, math.min(first + 999, #ARGV)))
        end
        redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
        redis.call('EXPIRE', KEYS[2], tonumber(ARGV[4]))
        local over = redis.call('LLEN', KEYS[1]) - tonumber(ARGV[3])
        if over > 0 then
          redis.call('LTRIM', KEYS[1], over, -1)
          return over
        end
        return 0
        """
}

extension RedisValue {
    /// The reply's kind, for a log line (never its content).
    var kind: String {
        switch self {
        case .bulkString: "a string"
        case .status: "a status"
        case .integer: "an integer"
        case .array: "an array"
        case .null: "null"
        case .error: "an error"
        }
    }
}
