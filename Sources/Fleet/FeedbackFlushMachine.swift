import Feedback

/// Entries of one app on their way from this instance's `FeedbackStore` to
/// the app's list in Redis. `sequence` counts this instance's batches of
/// the app from 1: the write script skips a batch whose sequence Redis has
/// seen (`FleetFeedback.writeScript`), so a batch sent again after a lost
/// reply is written once.
public struct FeedbackBatch: Equatable, Sendable {
    public var app: String
    public var sequence: UInt64
    public var entries: [FeedbackEntry]

    public init(app: String, sequence: UInt64, entries: [FeedbackEntry]) {
        (self.app, self.sequence, self.entries) = (app, sequence, entries)
    }
}

/// When this instance writes its feedback entries to Redis, as a state
/// machine without I/O (`FleetFeedback` carries out its actions). Per app
/// at most one batch is out at a time: sent and waiting for its reply, or
/// failed and waiting for its retry. A batch that failed is sent again,
/// the same entries under the same sequence, before any newer entry of its
/// app: a failure may have been written (the reply was lost), and the
/// sequence makes the second write a no-op then. Meanwhile the app's newer
/// entries wait in the store, bounded by `FEEDBACK_MAX` as they always
/// were; so an app holds at most one batch and one full ring here.
public struct FeedbackFlushMachine: Sendable {
    public enum Action: Equatable, Sendable {
        /// Write this batch to Redis (the script), then report with
        /// `written` or `failed`.
        case send(FeedbackBatch)
        /// Take up to `FleetFeedback.batchLimit` entries from the store for
        /// each app holding some, but for these (a batch of theirs is out),
        /// and hand them to `taken`.
        case take(skipping: Set<String>)
        /// Add `count` to the app's dropped entries (the list's trim).
        case countDropped(app: String, count: Int)
        /// The first failure of an app's batch since its last write: one
        /// log line, not one per retry.
        case logFailure(app: String, entries: Int, error: String)
        /// The app's batch is written after `failures` failed tries.
        case logRecovered(app: String, entries: Int, failures: Int)
    }

    private struct Out {
        var batch: FeedbackBatch
        var awaitingReply: Bool
        var failures: Int
        var retryAt: ContinuousClock.Instant?
    }

    /// Sequences used, per app.
    private var sequences: [String: UInt64] = [:]
    private var out: [String: Out] = [:]

    /// The first retry of a failed batch waits this long, each next one
    /// twice as long, up to `maxRetryDelay`: while Redis is away a batch
    /// fails after the link's command timeout anyway, and a retry that
    /// waits costs nothing.
    public static let firstRetryDelay: Duration = .milliseconds(200)
    public static let maxRetryDelay: Duration = .seconds(5)

    public init() {}

    /// Entries in batches that are out (sent, or failed and to be sent
    /// again): with the store's, what waits for Redis.
    public var entriesOut: Int { out.values.reduce(0) { $0 + $1.batch.entries.count } }

    /// Whether a batch of `app` is out.
    public func isOut(app: String) -> Bool { out[app] != nil }

    /// A round: on the flusher's timer, before a pull (`force`: a failed
    /// batch is retried without waiting for its delay) and at shutdown.
    /// Only with the link connected: a batch sent to a link that is down
    /// would only fail after the command timeout, and entries never sent
    /// may still be answered by a pull on this instance while Redis is away.
    public mutating func round(now: ContinuousClock.Instant, connected: Bool, force: Bool,
                               into actions: inout [Action]) {
        guard connected else { return }
        for app in out.keys.sorted() {
            guard var waiting = out[app], !waiting.awaitingReply else { continue }
            if !force, let retryAt = waiting.retryAt, now < retryAt { continue }
            waiting.awaitingReply = true
            out[app] = waiting
            actions.append(.send(waiting.batch))
        }
        actions.append(.take(skipping: Set(out.keys)))
    }

    /// What `.take` took from the store for `app`: a new batch, sent.
    public mutating func taken(app: String, entries: [FeedbackEntry], into actions: inout [Action]) {
        guard !entries.isEmpty else { return }
        guard out[app] == nil else {
            preconditionFailure("FeedbackFlushMachine: entries taken for \(app) while a batch of it is out")
        }
        let sequence = (sequences[app] ?? 0) + 1
        sequences[app] = sequence
        let batch = FeedbackBatch(app: app, sequence: sequence, entries: entries)
        out[app] = Out(batch: batch, awaitingReply: true, failures: 0, retryAt: nil)
        actions.append(.send(batch))
    }

    /// Redis answered the script for `app`'s batch `sequence`: written now
    /// or before (a retry), `dropped` entries trimmed off the list's old end.
    public mutating func written(app: String, sequence: UInt64, dropped: Int, into actions: inout [Action]) {
        guard let waiting = out[app], waiting.awaitingReply, waiting.batch.sequence == sequence else {
            preconditionFailure("FeedbackFlushMachine: a reply for \(app) batch \(sequence), which is not awaited")
        }
        out[app] = nil
        if waiting.failures > 0 {
            actions.append(.logRecovered(app: app, entries: waiting.batch.entries.count, failures: waiting.failures))
        }
        if dropped > 0 { actions.append(.countDropped(app: app, count: dropped)) }
    }

    /// The script for `app`'s batch `sequence` failed (an error, a timeout,
    /// a lost connection): it may have run. Kept, and sent again after the
    /// retry delay.
    public mutating func failed(app: String, sequence: UInt64, error: String, now: ContinuousClock.Instant,
                                into actions: inout [Action]) {
        guard var waiting = out[app], waiting.awaitingReply, waiting.batch.sequence == sequence else {
            preconditionFailure("FeedbackFlushMachine: a failure for \(app) batch \(sequence), which is not awaited")
        }
        waiting.awaitingReply = false
        waiting.failures += 1
        let exponent = min(waiting.failures - 1, 10)
        waiting.retryAt = now + min(Self.firstRetryDelay * (1 << exponent), Self.maxRetryDelay)
        out[app] = waiting
        if waiting.failures == 1 {
            actions.append(.logFailure(app: app, entries: waiting.batch.entries.count, error: error))
        }
    }
}
