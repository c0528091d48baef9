import EventLoop
import Glibc
import Locking
import Redis
import Synchronization

/// Work handed between the instances of a fleet, at least once: a Redis
/// Stream read by every instance in one consumer group (`FleetKeys.consumerGroup`),
/// each under its own consumer name (`Fleet.instance`).
///
/// - `add` writes entries only when the stream's length plus theirs stays
///   within `maxPending`, for the whole fleet at once (a Lua script: the
///   length check and the writes are one step on the server, so two
///   instances cannot both pass the check and overshoot). Entries are
///   deleted once done, so the length is what is pending.
/// - Reads (`XREADGROUP … BLOCK`, on the `reads` link) ask only for the
///   room this instance has (`capacity` held at most); `done` acknowledges
///   and deletes (`XACK`, `XDEL`, one script) and makes room.
/// - What this instance holds, in flight or waiting for a retry, has its
///   idle time reset every `renewInterval` (`XCLAIM … JUSTID` to itself),
///   well within `claimIdle`, so no other instance takes it over; entries
///   idle longer than `claimIdle` (their holder died or stopped) are taken
///   over with `XAUTOCLAIM` (Redis 7.0) and counted in `claimed`.
/// - A Redis that lost the group (restarted without its data, or flushed)
///   answers `NOGROUP`: the group is created again (from id 0: whatever the
///   stream holds is read).
///
/// Every reply is read defensively (`StreamEntry`): what is not the shape
/// Redis gives is a log line and skipped, never a crash. Thread-safe: the
/// state is under a lock; replies come on the links' threads, timers run
/// on the `commands` link's thread.
public final class StreamQueue: Sendable {
    public enum AddResult: Sendable, Equatable {
        case added
        /// Over `maxPending`: nothing was written.
        case full
        /// Redis did not take the write (error, timeout, down): nothing
        /// is known to be written.
        case failed(RedisError)
    }

    /// Hears entries read (`claimed`: taken over from another consumer),
    /// on a link's thread; each must be `done` once, whatever happens to
    /// it, unless the process stops first.
    public typealias Receive = @Sendable (_ entries: [StreamEntry], _ claimed: Bool) -> Void
    public typealias Log = @Sendable (_ line: String) -> Void

    public let stream: String
    public let group: String
    public let maxPending: Int
    /// Entries this instance holds at most (read, not yet done).
    public let capacity: Int
    /// How often held entries' idle time is reset and the stream's length
    /// read: a third of `claimIdle`, so a renewal late by a whole interval
    /// still comes before another instance may claim.
    public let renewInterval: Duration
    /// How often entries idle past `claimIdle` are looked for.
    public let claimInterval: Duration
    private let fleet: Fleet
    private let receive: Receive
    private let log: Log
    private let state = Locked(ConsumerState())
    private let lengthSeen = Atomic<Int>(0)
    private let claimedCount = Atomic<Int>(0)
    private let badCount = Atomic<Int>(0)

    struct ConsumerState {
        var held: Set<String> = []
        var started = false
        var reading = false
        var claiming = false
        var stopped = false
        var acks: [String] = []
        var ackScheduled = false
        var readFailing = false
        var claimCursor = "0-0"
        var acksSent = 0
        /// Commands Redis refused (an ACL without them, say), each said
        /// once until it is accepted again.
        var refusedSaid: Set<String> = []
    }

    /// Entries one read or claim asks for at most, and ids one
    /// acknowledgement or renewal names (Lua's `unpack` takes a few
    /// thousand; a reply of 500 entries is well within the reply limits).
    static let batch = 500

    public init(fleet: Fleet, stream: String, group: String = FleetKeys.consumerGroup, maxPending: Int, capacity: Int,
                log: @escaping Log, receive: @escaping Receive) {
        precondition(maxPending >= 1 && capacity >= 1)
        (self.fleet, self.stream, self.group, self.maxPending, self.capacity) = (fleet, stream, group, maxPending, capacity)
        (self.log, self.receive) = (log, receive)
        renewInterval = max(fleet.claimIdle / 3, .milliseconds(100))
        claimInterval = max(fleet.claimIdle / 2, .milliseconds(200))
    }

    /// Entries held now (read, not done).
    public var held: Int { state.withLock { $0.held.count } }
    /// The stream's length when last read (every `renewInterval`): the
    /// fleet's pending entries.
    public var length: Int { lengthSeen.load(ordering: .relaxed) }
    /// Entries taken over from other consumers.
    public var claimed: Int { claimedCount.load(ordering: .relaxed) }
    /// Entries or replies that were not what Redis gives, skipped.
    public var malformed: Int { badCount.load(ordering: .relaxed) }

    // MARK: adding

    /// Adds `entries` (each its field–value pairs) all or none, within
    /// `maxPending` across the fleet. `completion` runs on the `commands`
    /// link's thread once Redis answered (or did not in time).
    public func add(_ entries: [[(name: [UInt8], value: [UInt8])]],
                    completion: @escaping @Sendable (AddResult) -> Void) {
        var arguments: [[UInt8]] = [Array("EVAL".utf8), Array(Self.addScript.utf8), Array("1".utf8), Array(stream.utf8),
                                    Array(String(maxPending).utf8), Array(String(entries.count).utf8)]
        arguments.reserveCapacity(arguments.count + entries.reduce(0) { $0 + 1 + $1.count * 2 })
        for entry in entries {
            arguments.append(Array(String(entry.count * 2).utf8))
            for field in entry {
                arguments.append(field.name)
                arguments.append(field.value)
            }
        }
        fleet.commands.send(RedisCommand(arguments)) { reply in
            switch reply {
            case .success(.integer(1)): completion(.added)
            case .success(.integer(0)): completion(.full)
            case .success(let other): completion(.failed(.protocolError("unexpected reply to the add script: \(other)")))
            case .failure(let error): completion(.failed(error))
            }
        }
    }

    /// Atomic across the fleet (a script runs alone on the server): the
    /// length check and every write, or nothing. ARGV: the bound, the
    /// number of entries, then per entry the number of its arguments and
    /// its field–value pairs.
    static let addScript = """
        local n = tonumber(ARGV[2])
        if redis.call('XLEN', KEYS[1]) + n > tonumber(ARGV[1]) then return 0 end
        local i = 3
        for _ = 1, n do
          local c = tonumber(ARGV[i])
          redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + c))
          i = i + c + 1
        end
        return 1
        """

    /// `XACK` and `XDEL` as one step: an entry acknowledged but left in
    /// the stream would count against `maxPending` for ever.
    static let ackScript = """
        redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
        return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))
        """

    // MARK: consuming

    /// Creates the group if needed and starts reading, renewing and
    /// claiming. Once.
    public func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        precondition(first, "a stream queue starts once")
        createGroup { [self] in
            readMore()
            renewTick()
            claimTick()
        }
    }

    /// Stops reading and claiming (shutdown): what is held stays held, its
    /// idle time still renewed while the links are open; what is never
    /// `done` stays pending for the others to claim.
    public func stop() {
        state.withLock { $0.stopped = true }
    }

    /// `id` is done (delivered, or failed for good): acknowledged and
    /// deleted, its place given back.
    public func done(_ id: String) {
        let (schedule, resume) = state.withLock { state in
            guard state.held.remove(id) != nil else { return (false, false) }
            state.acks.append(id)
            let schedule = !state.ackScheduled
            state.ackScheduled = true
            return (schedule, !state.reading && !state.stopped)
        }
        if schedule {
            // A short wait gathers the acknowledgements of many deliveries
            // into one command.
            after(.milliseconds(2)) { [self] in flushAcks() }
        }
        if resume { readMore() }
    }

    /// `id` could not be finished here now (a hook that is down): it is no
    /// longer held nor renewed, so after `claimIdle` it is taken over like
    /// a dead instance's, by any instance, this one included; its place is
    /// given back.
    public func release(_ id: String) {
        let resume = state.withLock { state in
            guard state.held.remove(id) != nil else { return false }
            return !state.reading && !state.stopped
        }
        if resume { readMore() }
    }

    /// Waits (at most `timeout`) until every `done` entry's
    /// acknowledgement was answered: before the links close at exit, so
    /// what was delivered is not delivered again by whoever would claim it.
    public func waitForAcknowledgements(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ !$0.acks.isEmpty || $0.acksSent > 0 }) && ContinuousClock.now < deadline {
            usleep(5_000)
        }
    }

    private func createGroup(then next: @escaping @Sendable () -> Void) {
        fleet.commands.send(RedisCommand("XGROUP", "CREATE", stream, group, "0", "MKSTREAM")) { [self] reply in
            switch reply {
            case .success:
                next()
            case .failure(.serverError(let text)) where text.hasPrefix("BUSYGROUP"):
                next()
            case .failure(let error):
                log("stream \(stream): cannot create the consumer group: \(error); trying again in 1 s")
                after(.seconds(1)) { [self] in createGroup(then: next) }
            }
        }
    }

    private func readMore() {
        let count: Int? = state.withLock { state in
            let room = capacity - state.held.count
            guard !state.stopped, room > 0, !state.reading else { return nil }
            state.reading = true
            return min(room, Self.batch)
        }
        guard let count else { return }
        let blockMilliseconds = Int(Fleet.readBlock.components.seconds * 1000)
        let command = RedisCommand("XREADGROUP", "GROUP", group, fleet.instance, "COUNT", String(count),
                                   "BLOCK", String(blockMilliseconds), "STREAMS", stream, ">")
        fleet.reads.send(command) { [self] reply in
            switch reply {
            case .success(let value):
                guard let (entries, skipped) = StreamEntry.readReply(value) else {
                    badCount.add(1, ordering: .relaxed)
                    readFailed("XREADGROUP answered what is not a stream reply")
                    return
                }
                recovered()
                if skipped > 0 { skip(skipped) }
                hand(entries, claimed: false)
                state.withLock { $0.reading = false }
                readMore()
            case .failure(.serverError(let text)) where text.hasPrefix("NOGROUP"):
                log("stream \(stream): the consumer group is gone (Redis lost its data?): creating it again")
                createGroup { [self] in
                    state.withLock { $0.reading = false }
                    readMore()
                }
            case .failure(let error):
                readFailed("\(error)")
            }
        }
    }

    private func readFailed(_ why: String) {
        let first = state.withLock { state in
            defer { state.readFailing = true }
            return !state.readFailing
        }
        if first { log("stream \(stream): reading failed: \(why); retrying every second") }
        after(.seconds(1)) { [self] in
            state.withLock { $0.reading = false }
            readMore()
        }
    }

    private func recovered() {
        let was = state.withLock { state in
            defer { state.readFailing = false }
            return state.readFailing
        }
        if was { log("stream \(stream): reading again") }
    }

    private func skip(_ count: Int) {
        badCount.add(count, ordering: .relaxed)
        log("stream \(stream): \(count) entries without a valid id skipped")
    }

    /// Takes `entries` into `held` and hands on those not held already (a
    /// renewal that failed may let this instance claim its own entry).
    private func hand(_ entries: [StreamEntry], claimed: Bool) {
        guard !entries.isEmpty else { return }
        let new = state.withLock { state in entries.filter { state.held.insert($0.id).inserted } }
        if claimed { claimedCount.add(new.count, ordering: .relaxed) }
        if !new.isEmpty { receive(new, claimed) }
    }

    private func flushAcks() {
        let ids: [String] = state.withLock { state in
            let ids = Array(state.acks.prefix(Self.batch))
            state.acks.removeFirst(ids.count)
            state.ackScheduled = !state.acks.isEmpty
            if !ids.isEmpty { state.acksSent += 1 }
            return ids
        }
        guard !ids.isEmpty else { return }
        let more = ids.count == Self.batch
        let command = RedisCommand([Array("EVAL".utf8), Array(Self.ackScript.utf8), Array("1".utf8), Array(stream.utf8),
                                    Array(group.utf8)] + ids.map { Array($0.utf8) })
        fleet.commands.send(command) { [self] reply in
            state.withLock { $0.acksSent -= 1 }
            if case .failure(let error) = reply {
                // Kept, and tried again: an entry done but not acknowledged
                // would be delivered again by whoever claims it.
                log("stream \(stream): acknowledging \(ids.count) entries failed: \(error); trying again in 1 s")
                let schedule = state.withLock { state in
                    state.acks.append(contentsOf: ids)
                    defer { state.ackScheduled = true }
                    return !state.ackScheduled
                }
                if schedule { after(.seconds(1)) { [self] in flushAcks() } }
            }
        }
        if more { after(.zero) { [self] in flushAcks() } }
    }

    /// Resets the idle time of every held entry, and reads the length.
    private func renewTick() {
        let held = state.withLock { Array($0.held) }
        var start = 0
        while start < held.count {
            let chunk = held[start..<min(start + Self.batch, held.count)]
            start += Self.batch
            let command = RedisCommand(["XCLAIM", stream, group, fleet.instance, "0"].map { Array($0.utf8) }
                + chunk.map { Array($0.utf8) } + [Array("JUSTID".utf8)])
            fleet.commands.send(command) { [self] reply in refusal("XCLAIM", reply) }
        }
        fleet.commands.send(RedisCommand("XLEN", stream)) { [self] reply in
            if case .success(.integer(let length)) = reply { lengthSeen.store(Int(length), ordering: .relaxed) }
        }
        after(renewInterval) { [self] in renewTick() }
    }

    /// Takes over entries idle past `claimIdle`, as room allows, then
    /// looks again after `claimInterval` (at once while a scan is
    /// unfinished and there is room).
    private func claimTick() {
        let count: Int? = state.withLock { state in
            let room = capacity - state.held.count
            guard !state.stopped, room > 0, !state.claiming else { return nil }
            state.claiming = true
            return min(room, Self.batch)
        }
        guard let count else {
            after(claimInterval) { [self] in claimTick() }
            return
        }
        let cursor = state.withLock { $0.claimCursor }
        let idle = fleet.claimIdle.components
        let idleMilliseconds = idle.seconds * 1000 + idle.attoseconds / 1_000_000_000_000_000
        let command = RedisCommand("XAUTOCLAIM", stream, group, fleet.instance, String(idleMilliseconds), cursor,
                                   "COUNT", String(count))
        fleet.commands.send(command) { [self] reply in
            var next = claimInterval
            switch reply {
            case .success(let value):
                if let (cursor, entries, skipped) = StreamEntry.autoclaimReply(value) {
                    if skipped > 0 { skip(skipped) }
                    state.withLock { $0.claimCursor = cursor }
                    hand(entries, claimed: true)
                    if cursor != "0-0" { next = .zero }
                } else {
                    badCount.add(1, ordering: .relaxed)
                    log("stream \(stream): XAUTOCLAIM answered what is not its reply; trying again later")
                }
            case .failure(.serverError(let text)) where text.hasPrefix("NOGROUP"):
                state.withLock { $0.claimCursor = "0-0" }
            case .failure(.serverError):
                refusal("XAUTOCLAIM", reply)
            case .failure:
                // The link's own lines say why; the reads say it too.
                break
            }
            if case .success = reply { refusal("XAUTOCLAIM", reply) }
            state.withLock { $0.claiming = false }
            after(next) { [self] in claimTick() }
        }
    }

    /// A command Redis refused with an error reply is said once (without
    /// it, held entries are taken by others, or dead ones never are), and
    /// once more after it was accepted again.
    private func refusal(_ command: String, _ reply: Result<RedisValue, RedisError>) {
        switch reply {
        case .failure(.serverError(let text)):
            let first = state.withLock { $0.refusedSaid.insert(command).inserted }
            if first { log("stream \(stream): Redis refuses \(command): \(text)") }
        case .success:
            let was = state.withLock { $0.refusedSaid.remove(command) != nil }
            if was { log("stream \(stream): Redis takes \(command) again") }
        case .failure:
            break
        }
    }

    private func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) {
        let loop = fleet.commands.loop
        loop.execute { loop.schedule(after: delay) { action() } }
    }
}
