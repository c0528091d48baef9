/// The consumer side of a `StreamQueue` as a state machine without I/O:
/// events in, actions out. `StreamQueue` carries out the actions (Redis
/// commands, timers, `receive`, log lines) and reports what came of each
/// as an event; every decision is here. It reads no clock: time reaches it
/// as the timers it asked for firing (`fired`).
///
/// - The group: `start` creates it (`XGROUP CREATE … MKSTREAM`); once it
///   exists, reading begins and so do the renewal and claim rounds. A
///   creation that fails is said and tried again after a second. A read
///   answered `NOGROUP`, or ended because its stream was deleted (Redis
///   lost its data), creates it again, then reads.
/// - Reading: one `XREADGROUP` at a time, for `min(batch, capacity − held)`
///   entries, only with room and not stopped. What a reply brings that is
///   not held already is held and delivered; the next read is decided once
///   `receive` returned (`handedOn`), so entries finished inside `receive`
///   give their room to that read. `done` and `release` resume reading
///   when no read is out. A failed read is said once until one succeeds,
///   and tried again every second.
/// - Acknowledging: `done` of a held id gathers it for 2 ms, then one
///   command acknowledges and deletes up to `batch` ids (the rest at
///   once after), each with the feedback its `StreamAck` carries; a
///   failed one keeps its ids and their feedback and tries again after a
///   second. `done` of an id not held does nothing.
/// - `release`d ids are no longer held, renewed nor acknowledged.
/// - Renewal, every `renewInterval`: every held id (`XCLAIM … JUSTID`, in
///   batches), and the stream's length.
/// - Claiming, every `claimInterval` (at once while a scan is unfinished):
///   entries idle past the claim time, as room allows.
/// - Stopped (shutdown): neither reads nor claims; still renews what it
///   holds, acknowledges what is done, and delivers what a read already
///   out brings.
/// - A command Redis refuses (`XCLAIM`, `XAUTOCLAIM`: an ACL without it)
///   is said once, and once more when it is accepted again.
///
/// An event the queue's structure rules out (a reply to a command not
/// out, a timer not set, a second start) stops the process naming it.
public struct StreamQueueMachine: Sendable {
    /// Entries one read or claim asks for at most, and ids one
    /// acknowledgement or renewal names (Lua's `unpack` takes a few
    /// thousand; a reply of 500 entries is well within the reply limits).
    public static let batch = 500
    /// How long acknowledgements are gathered into one command.
    public static let ackGathering: Duration = .milliseconds(2)
    /// The wait before a failed group creation, read or acknowledgement is
    /// tried again.
    public static let retryDelay: Duration = .seconds(1)
    /// The claim cursor of a scan's start (and the one a finished scan
    /// answers).
    public static let scanStart = "0-0"

    public enum Timer: Hashable, Sendable {
        case createGroup, read, ackFlush, renew, claim
    }

    public enum Action: Equatable, Sendable {
        /// `XGROUP CREATE … 0 MKSTREAM`; report `groupCreated` (BUSYGROUP
        /// too) or `groupCreateFailed`.
        case createGroup
        /// `XREADGROUP … COUNT count BLOCK …`; report `readReplied`.
        case read(count: Int)
        /// Hand these read entries to `receive`, then report `handedOn`.
        case deliver(ids: [String])
        /// Hand these claimed entries to `receive` (as claimed).
        case deliverClaimed(ids: [String])
        /// Acknowledge and delete (the ack script), appending their
        /// feedback; report `acksReplied` or `acksFailed`.
        case sendAcks([StreamAck])
        /// Reset these ids' idle time (`XCLAIM … JUSTID`); report `renewReplied`.
        case renew([String])
        /// `XLEN`; report `lengthRead` when it answers a number.
        case readLength
        /// `XAUTOCLAIM … cursor COUNT count`; report `claimReplied`.
        case claim(cursor: String, count: Int)
        /// Report `fired(timer)` after `delay`.
        case schedule(Timer, after: Duration)
        /// One line about the stream.
        case log(String)
    }

    /// What a read brought, as `StreamEntry.readReply` made it out.
    public enum ReadReply: Equatable, Sendable {
        /// The ids of the entries read, in order (none: the block timed out),
        /// and how many had no valid id.
        case entries(ids: [String], skipped: Int)
        /// Not the shape of a read's reply.
        case unreadable
        /// The group is gone: `NOGROUP`, or the blocked read ended because
        /// its stream was deleted.
        case noGroup
        /// Any other error: the link's or Redis's, described.
        case failed(String)
    }

    /// What a claim brought, as `StreamEntry.autoclaimReply` made it out.
    public enum ClaimReply: Equatable, Sendable {
        case entries(cursor: String, ids: [String], skipped: Int)
        case unreadable
        case noGroup
        /// Redis answered an error: its text.
        case refused(String)
        /// The link failed (its own lines say why).
        case failed
    }

    /// What came of a command whose refusal is said (a renewal).
    public enum CommandReply: Equatable, Sendable {
        case accepted
        /// Redis answered an error: its text.
        case refused(String)
        /// The link failed (its own lines say why).
        case failed
    }

    private enum Reader: Equatable {
        case notStarted
        /// `XGROUP CREATE` out; `first`: the renewal and claim rounds begin
        /// once it exists.
        case creatingGroup(first: Bool)
        case waitingToCreateGroup(first: Bool)
        case idle
        /// `XREADGROUP` out.
        case reading
        /// Its entries with `receive`.
        case handingOn
        case waitingToRetry
    }

    public let capacity: Int
    public let renewInterval: Duration
    public let claimInterval: Duration

    private var reader = Reader.notStarted
    private var stopped = false
    private var readFailing = false
    private var holding: Set<String> = []
    private var acks: [StreamAck] = []
    private var ackScheduled = false
    private var acksOut = 0
    /// The renewal and claim rounds run (the group was made once).
    private var rounds = false
    private var claiming = false
    private var claimCursor = Self.scanStart
    /// Commands Redis refused, each said once until it is accepted again.
    private var refusedSaid: Set<String> = []

    /// Entries taken over from other consumers.
    public private(set) var claimed = 0
    /// Entries or replies that were not what Redis gives, skipped.
    public private(set) var malformed = 0
    /// The stream's length when last read.
    public private(set) var length = 0

    public init(capacity: Int, renewInterval: Duration, claimInterval: Duration) {
        precondition(capacity >= 1)
        (self.capacity, self.renewInterval, self.claimInterval) = (capacity, renewInterval, claimInterval)
    }

    /// Entries held now (read or claimed, not done nor released).
    public var held: Int { holding.count }
    /// Whether `id` is held.
    public func holds(_ id: String) -> Bool { holding.contains(id) }
    /// Whether a `done` id waits for its acknowledgement or its reply.
    public var acknowledging: Bool { !acks.isEmpty || acksOut > 0 }

    // MARK: the group

    public mutating func start(into actions: inout [Action]) {
        guard reader == .notStarted else { preconditionFailure("a stream queue starts once") }
        reader = .creatingGroup(first: true)
        actions.append(.createGroup)
    }

    public mutating func groupCreated(into actions: inout [Action]) {
        guard case .creatingGroup(let first) = reader else {
            preconditionFailure("StreamQueueMachine: the group created while \(reader)")
        }
        reader = .idle
        readIfRoom(into: &actions)
        if first {
            rounds = true
            renewRound(into: &actions)
            claimRound(into: &actions)
        }
    }

    public mutating func groupCreateFailed(error: String, into actions: inout [Action]) {
        guard case .creatingGroup(let first) = reader else {
            preconditionFailure("StreamQueueMachine: the group's creation failed while \(reader)")
        }
        reader = .waitingToCreateGroup(first: first)
        actions.append(.log("cannot create the consumer group: \(error); trying again in 1 s"))
        actions.append(.schedule(.createGroup, after: Self.retryDelay))
    }

    // MARK: reading

    public mutating func readReplied(_ reply: ReadReply, into actions: inout [Action]) {
        guard reader == .reading else { preconditionFailure("StreamQueueMachine: a read's reply while \(reader)") }
        switch reply {
        case .entries(let ids, let skipped):
            if readFailing {
                readFailing = false
                actions.append(.log("reading again"))
            }
            skip(skipped, into: &actions)
            let new = take(ids)
            if new.isEmpty {
                reader = .idle
                readIfRoom(into: &actions)
            } else {
                reader = .handingOn
                actions.append(.deliver(ids: new))
            }
        case .unreadable:
            malformed += 1
            readFailed("XREADGROUP answered what is not a stream reply", into: &actions)
        case .noGroup:
            actions.append(.log("the consumer group is gone (Redis lost its data?): creating it again"))
            reader = .creatingGroup(first: false)
            actions.append(.createGroup)
        case .failed(let why):
            readFailed(why, into: &actions)
        }
    }

    /// `receive` returned for the entries of `.deliver`.
    public mutating func handedOn(into actions: inout [Action]) {
        guard reader == .handingOn else { preconditionFailure("StreamQueueMachine: handed on while \(reader)") }
        reader = .idle
        readIfRoom(into: &actions)
    }

    private mutating func readFailed(_ why: String, into actions: inout [Action]) {
        if !readFailing {
            readFailing = true
            actions.append(.log("reading failed: \(why); retrying every second"))
        }
        reader = .waitingToRetry
        actions.append(.schedule(.read, after: Self.retryDelay))
    }

    private mutating func readIfRoom(into actions: inout [Action]) {
        let room = capacity - holding.count
        guard reader == .idle, !stopped, room > 0 else { return }
        reader = .reading
        actions.append(.read(count: min(room, Self.batch)))
    }

    /// Holds the ids of `ids` not held already (a renewal that failed may
    /// let this instance claim its own entry), the first of each: those to
    /// deliver.
    private mutating func take(_ ids: [String]) -> [String] {
        ids.filter { holding.insert($0).inserted }
    }

    private mutating func skip(_ count: Int, into actions: inout [Action]) {
        guard count > 0 else { return }
        malformed += count
        actions.append(.log("\(count) entries without a valid id skipped"))
    }

    // MARK: finishing

    /// `id` is done: acknowledged and deleted, with `feedback` appended to
    /// its app's list in the same step; its place given back.
    public mutating func done(_ id: String, feedback: StreamAck.Feedback? = nil, into actions: inout [Action]) {
        guard holding.remove(id) != nil else { return }
        acks.append(StreamAck(id: id, feedback: feedback))
        scheduleAcks(after: Self.ackGathering, into: &actions)
        resume(into: &actions)
    }

    /// `id` could not be finished here now: no longer held nor renewed, so
    /// it is claimed after the idle time; its place given back.
    public mutating func release(_ id: String, into actions: inout [Action]) {
        guard holding.remove(id) != nil else { return }
        resume(into: &actions)
    }

    /// Shutdown: no more reads nor claims.
    public mutating func stop() {
        stopped = true
    }

    private mutating func resume(into actions: inout [Action]) {
        if reader == .idle { readIfRoom(into: &actions) }
    }

    private mutating func scheduleAcks(after delay: Duration, into actions: inout [Action]) {
        guard !ackScheduled else { return }
        ackScheduled = true
        actions.append(.schedule(.ackFlush, after: delay))
    }

    private mutating func flushAcks(into actions: inout [Action]) {
        let batch = Array(acks.prefix(Self.batch))
        acks.removeFirst(batch.count)
        ackScheduled = !acks.isEmpty
        guard !batch.isEmpty else { return }
        acksOut += 1
        actions.append(.sendAcks(batch))
        if batch.count == Self.batch { actions.append(.schedule(.ackFlush, after: .zero)) }
    }

    public mutating func acksReplied() {
        precondition(acksOut > 0, "StreamQueueMachine: an acknowledgement's reply with none out")
        acksOut -= 1
    }

    /// Kept, with their feedback, and tried again: an entry done but not
    /// acknowledged would be delivered again by whoever claims it. Sent
    /// again, an acknowledgement Redis ran (its reply lost) acknowledges
    /// nothing more and so appends nothing more (`StreamQueue.ackScript`).
    public mutating func acksFailed(_ failed: [StreamAck], error: String, into actions: inout [Action]) {
        precondition(acksOut > 0, "StreamQueueMachine: an acknowledgement's failure with none out")
        acksOut -= 1
        actions.append(.log("acknowledging \(failed.count) entries failed: \(error); trying again in 1 s"))
        acks.append(contentsOf: failed)
        scheduleAcks(after: Self.retryDelay, into: &actions)
    }

    // MARK: timers

    public mutating func fired(_ timer: Timer, into actions: inout [Action]) {
        switch timer {
        case .createGroup:
            guard case .waitingToCreateGroup(let first) = reader else {
                preconditionFailure("StreamQueueMachine: the group's retry fired while \(reader)")
            }
            reader = .creatingGroup(first: first)
            actions.append(.createGroup)
        case .read:
            guard reader == .waitingToRetry else { preconditionFailure("StreamQueueMachine: a read's retry fired while \(reader)") }
            reader = .idle
            readIfRoom(into: &actions)
        case .ackFlush:
            // Not checked against `ackScheduled`: a full batch looks once
            // more at once even when it took the last ids, and a `done`
            // meanwhile sets a flush of its own; the second finds nothing.
            flushAcks(into: &actions)
        case .renew:
            precondition(rounds, "StreamQueueMachine: a renewal fired before the group was made")
            renewRound(into: &actions)
        case .claim:
            precondition(rounds && !claiming, "StreamQueueMachine: a claim round fired with one out or before the group")
            claimRound(into: &actions)
        }
    }

    // MARK: renewing and claiming

    private mutating func renewRound(into actions: inout [Action]) {
        let ids = holding.sorted()
        for start in stride(from: 0, to: ids.count, by: Self.batch) {
            actions.append(.renew(Array(ids[start..<min(start + Self.batch, ids.count)])))
        }
        actions.append(.readLength)
        actions.append(.schedule(.renew, after: renewInterval))
    }

    public mutating func renewReplied(_ reply: CommandReply, into actions: inout [Action]) {
        said("XCLAIM", reply, into: &actions)
    }

    public mutating func lengthRead(_ length: Int) {
        self.length = length
    }

    private mutating func claimRound(into actions: inout [Action]) {
        let room = capacity - holding.count
        guard !stopped, room > 0 else {
            actions.append(.schedule(.claim, after: claimInterval))
            return
        }
        claiming = true
        actions.append(.claim(cursor: claimCursor, count: min(room, Self.batch)))
    }

    public mutating func claimReplied(_ reply: ClaimReply, into actions: inout [Action]) {
        precondition(claiming, "StreamQueueMachine: a claim's reply with none out")
        claiming = false
        var next = claimInterval
        switch reply {
        case .entries(let cursor, let ids, let skipped):
            skip(skipped, into: &actions)
            claimCursor = cursor
            let new = take(ids)
            claimed += new.count
            if !new.isEmpty { actions.append(.deliverClaimed(ids: new)) }
            // A scan unfinished: its next part at once.
            if cursor != Self.scanStart { next = .zero }
            said("XAUTOCLAIM", .accepted, into: &actions)
        case .unreadable:
            malformed += 1
            actions.append(.log("XAUTOCLAIM answered what is not its reply; trying again later"))
            said("XAUTOCLAIM", .accepted, into: &actions)
        case .noGroup:
            claimCursor = Self.scanStart
        case .refused(let text):
            said("XAUTOCLAIM", .refused(text), into: &actions)
        case .failed:
            // The link's own lines say why; the reads say it too.
            break
        }
        actions.append(.schedule(.claim, after: next))
    }

    /// A refusal is said once (without the command, held entries are taken
    /// by others, or dead ones never are), and once more after the command
    /// was accepted again.
    private mutating func said(_ command: String, _ reply: CommandReply, into actions: inout [Action]) {
        switch reply {
        case .refused(let text):
            if refusedSaid.insert(command).inserted { actions.append(.log("Redis refuses \(command): \(text)")) }
        case .accepted:
            if refusedSaid.remove(command) != nil { actions.append(.log("Redis takes \(command) again")) }
        case .failed:
            break
        }
    }
}
