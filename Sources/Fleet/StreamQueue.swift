import EventLoop
import Glibc
import Locking
import Observability
import Redis

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
///   and deletes (`XACK`, `XDEL`, one script, `StreamAcknowledgement`, which
///   also appends the dead token an entry's end named to its app's
///   feedback list) and makes room.
/// - What this instance holds, in flight or waiting for a retry, has its
///   idle time reset every `renewInterval` (`XCLAIM … JUSTID` to itself),
///   well within `claimIdle`, so no other instance takes it over; entries
///   idle longer than `claimIdle` (their holder died or stopped) are taken
///   over with `XAUTOCLAIM` (Redis 7.0; `claimScript`, which also gives
///   each entry's delivery count) and counted in `claimed`.
/// - A Redis that lost the group (restarted without its data, or flushed)
///   answers `NOGROUP`, or ends a blocked read with `UNBLOCKED`: the group
///   is created again (from id 0: whatever the stream holds is read).
///
/// When to read and how much, what is held, when acknowledgements go out,
/// what is renewed and claimed, what a stopped queue still does and which
/// refusals are said is decided by `StreamQueueMachine`; this class carries
/// its actions out (the commands, the timers, `receive`, the log) and
/// reports every answer to it.
///
/// Every reply is read defensively (`StreamEntry`): what is not the shape
/// Redis gives is a log line and skipped, never a crash. Thread-safe: the
/// machine is under a lock, its actions carried out outside it; replies
/// come on the links' threads, timers run on the `commands` link's thread.
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
    private let logger: Logger
    /// Every decision of the consumer's; its actions are carried out
    /// here, outside the lock.
    private let state: Locked<StreamQueueMachine>

    public init(fleet: Fleet, stream: String, group: String = FleetKeys.consumerGroup, maxPending: Int, capacity: Int,
                logger: Logger, receive: @escaping Receive) {
        precondition(maxPending >= 1 && capacity >= 1)
        (self.fleet, self.stream, self.group, self.maxPending, self.capacity) = (fleet, stream, group, maxPending, capacity)
        (self.logger, self.receive) = (logger, receive)
        renewInterval = max(fleet.claimIdle / 3, .milliseconds(100))
        claimInterval = max(fleet.claimIdle / 2, .milliseconds(200))
        state = Locked(StreamQueueMachine(capacity: capacity, renewInterval: renewInterval, claimInterval: claimInterval))
    }

    /// Entries held now (read, not done).
    public var held: Int { state.withLock { $0.held } }
    /// The stream's length when last read (every `renewInterval`): the
    /// fleet's pending entries.
    public var length: Int { state.withLock { $0.length } }
    /// Entries taken over from other consumers.
    public var claimed: Int { state.withLock { $0.claimed } }
    /// Entries or replies that were not what Redis gives, skipped.
    public var malformed: Int { state.withLock { $0.malformed } }

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

    /// `XAUTOCLAIM` (ARGV: group, consumer, idle milliseconds, cursor,
    /// count), its reply given a fourth element: each claimed entry's
    /// delivery count (`XPENDING` of its id, read after the claim counted
    /// it), so the consumer can tell an entry whose every holder stopped.
    /// Redis keeps an error's code through `redis.call` (`NOGROUP …`).
    /// A script's commands are not undone when a later one fails, so the
    /// empty `XPENDING` first: a user without it (an ACL) is refused before
    /// anything is claimed, not after, with entries taken and never handed on.
    static let claimScript = """
        redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 0)
        local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
        local counts = {}
        for i, entry in ipairs(claimed[2]) do
          local pending = redis.call('XPENDING', KEYS[1], ARGV[1], entry[1], entry[1], 1)
          counts[i] = pending[1] and pending[1][4] or 0
        end
        claimed[4] = counts
        return claimed
        """

    // MARK: consuming

    /// Creates the group if needed and starts reading, renewing and
    /// claiming. Once.
    public func start() {
        feed { $0.start(into: &$1) }
    }

    /// Stops reading and claiming (shutdown): what is held stays held, its
    /// idle time still renewed while the links are open; what is never
    /// `done` stays pending for the others to claim.
    public func stop() {
        state.withLock { $0.stop() }
    }

    /// `id` is done (delivered, or failed for good): acknowledged and
    /// deleted, its place given back. `feedback`: the dead token its end
    /// named, appended to the app's feedback list by the acknowledgement
    /// itself, never twice.
    public func done(_ id: String, feedback: StreamAck.Feedback? = nil) {
        feed { $0.done(id, feedback: feedback, into: &$1) }
    }

    /// `id` could not be finished here now (a hook that is down): it is no
    /// longer held nor renewed, so after `claimIdle` it is taken over like
    /// a dead instance's, by any instance, this one included; its place is
    /// given back.
    public func release(_ id: String) {
        feed { $0.release(id, into: &$1) }
    }

    /// Waits (at most `timeout`) until every `done` entry's
    /// acknowledgement was answered: before the links close at exit, so
    /// what was delivered is not delivered again by whoever would claim it.
    public func waitForAcknowledgements(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ $0.acknowledging }) && ContinuousClock.now < deadline {
            usleep(5_000)
        }
    }

    /// Feeds one event to the machine under the lock, then carries out
    /// what it decided. `entries`: those a reply brought, for `.deliver`.
    private func feed(_ entries: [StreamEntry] = [],
                      _ event: (inout StreamQueueMachine, inout [StreamQueueMachine.Action]) -> Void) {
        var actions: [StreamQueueMachine.Action] = []
        state.withLock { event(&$0, &actions) }
        for action in actions {
            switch action {
            case .createGroup:
                createGroup()
            case .read(let count):
                read(count: count)
            case .deliver(let ids):
                receive(Self.pick(ids, from: entries), false)
                feed { $0.handedOn(into: &$1) }
            case .deliverClaimed(let ids):
                receive(Self.pick(ids, from: entries), true)
            case .sendAcks(let ids):
                sendAcks(ids)
            case .renew(let ids):
                renew(ids)
            case .readLength:
                fleet.commands.send(RedisCommand("XLEN", stream)) { [self] reply in
                    if case .success(.integer(let length)) = reply { state.withLock { $0.lengthRead(Int(length)) } }
                }
            case .claim(let cursor, let count):
                claim(cursor: cursor, count: count)
            case .schedule(let timer, let delay):
                let loop = fleet.commands.loop
                loop.execute { loop.schedule(after: delay) { [self] in feed { $0.fired(timer, into: &$1) } } }
            case .log(let line):
                logger.warning("stream \(stream): \(line)")
            }
        }
    }

    /// The entries `ids` names, in its order, the first of each id.
    private static func pick(_ ids: [String], from entries: [StreamEntry]) -> [StreamEntry] {
        var byID: [String: StreamEntry] = [:]
        for entry in entries where byID[entry.id] == nil { byID[entry.id] = entry }
        return ids.compactMap { byID[$0] }
    }

    private func createGroup() {
        fleet.commands.send(RedisCommand("XGROUP", "CREATE", stream, group, "0", "MKSTREAM")) { [self] reply in
            switch reply {
            case .success:
                feed { $0.groupCreated(into: &$1) }
            case .failure(.serverError(let text)) where text.hasPrefix("BUSYGROUP"):
                feed { $0.groupCreated(into: &$1) }
            case .failure(let error):
                feed { $0.groupCreateFailed(error: "\(error)", into: &$1) }
            }
        }
    }

    private func read(count: Int) {
        let blockMilliseconds = Int(Fleet.readBlock.components.seconds * 1000)
        let command = RedisCommand("XREADGROUP", "GROUP", group, fleet.instance, "COUNT", String(count),
                                   "BLOCK", String(blockMilliseconds), "STREAMS", stream, ">")
        fleet.reads.send(command) { [self] reply in
            var entries: [StreamEntry] = []
            let read: StreamQueueMachine.ReadReply
            switch reply {
            case .success(let value):
                if let (got, skipped) = StreamEntry.readReply(value) {
                    entries = got
                    read = .entries(ids: got.map(\.id), skipped: skipped)
                } else {
                    read = .unreadable
                }
            // Redis 7.0.15 ends a blocked read whose stream was deleted
            // (`DEL`, `FLUSHALL`) with `UNBLOCKED the stream key no longer
            // exists`: the group went with the key.
            case .failure(.serverError(let text)) where text.hasPrefix("NOGROUP") || text.hasPrefix("UNBLOCKED"):
                read = .noGroup
            case .failure(let error):
                read = .failed("\(error)")
            }
            feed(entries) { $0.readReplied(read, into: &$1) }
        }
    }

    private func sendAcks(_ acks: [StreamAck]) {
        let command = StreamAcknowledgement.command(stream: stream, group: group, acks: acks)
        fleet.commands.send(command) { [self] reply in
            switch reply {
            case .success(let value):
                state.withLock { $0.acksReplied() }
                acknowledged(StreamAcknowledgement.outcome(of: value, acks: acks), acks: acks)
            case .failure(let error):
                feed { $0.acksFailed(acks, error: "\(error)", into: &$1) }
            }
        }
    }

    /// The script ran: what it appended and what its trims dropped are
    /// counted; feedback Redis refused to append goes back to this
    /// instance's store, which the flusher writes from (and a pull here
    /// answers) as for any other path.
    private func acknowledged(_ outcome: StreamAcknowledgement.Outcome?, acks: [StreamAck]) {
        guard let outcome else {
            if acks.contains(where: { $0.feedback != nil }) {
                logger.warning("stream \(stream): the acknowledgement answered what is not its reply; "
                    + "its feedback is not counted")
            }
            return
        }
        for list in outcome.lists {
            list.store.countRecorded(list.appended, app: list.app)
            list.store.countDropped(list.dropped, app: list.app)
        }
        guard !outcome.notAppended.isEmpty else { return }
        for feedback in outcome.notAppended { feedback.store.record(feedback.entry) }
        logger.warning("stream \(stream): Redis refused to append \(outcome.notAppended.count) dead tokens with their "
            + "acknowledgement (\(outcome.refusal)); kept here for the feedback flusher")
    }

    private func renew(_ ids: [String]) {
        let command = RedisCommand(["XCLAIM", stream, group, fleet.instance, "0"].map { Array($0.utf8) }
            + ids.map { Array($0.utf8) } + [Array("JUSTID".utf8)])
        fleet.commands.send(command) { [self] reply in
            let renewed: StreamQueueMachine.CommandReply
            switch reply {
            case .success: renewed = .accepted
            case .failure(.serverError(let text)): renewed = .refused(text)
            case .failure: renewed = .failed
            }
            feed { $0.renewReplied(renewed, into: &$1) }
        }
    }

    private func claim(cursor: String, count: Int) {
        let idle = fleet.claimIdle.components
        let idleMilliseconds = idle.seconds * 1000 + idle.attoseconds / 1_000_000_000_000_000
        let command = RedisCommand("EVAL", Self.claimScript, "1", stream, group, fleet.instance,
                                   String(idleMilliseconds), cursor, String(count))
        fleet.commands.send(command) { [self] reply in
            var entries: [StreamEntry] = []
            let claimed: StreamQueueMachine.ClaimReply
            switch reply {
            case .success(let value):
                if let (next, got, skipped) = StreamEntry.autoclaimReply(value) {
                    entries = got
                    claimed = .entries(cursor: next, ids: got.map(\.id), skipped: skipped)
                } else {
                    claimed = .unreadable
                }
            case .failure(.serverError(let text)) where text.hasPrefix("NOGROUP"):
                claimed = .noGroup
            case .failure(.serverError(let text)):
                claimed = .refused(text)
            case .failure:
                claimed = .failed
            }
            feed(entries) { $0.claimReplied(claimed, into: &$1) }
        }
    }
}
