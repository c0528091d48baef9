// The relay's memory of refused tokens per app (ARCHITECTURE.md §5.6),
// shared by every event loop: recorded on the hot path of each failed push,
// read and cleared by the pull endpoint and pyapns' `feedback`.

import Locking

/// What the store has done for one app, for metrics.
public struct FeedbackCounts: Sendable, Equatable {
    /// Entries recorded since start.
    public var recorded: Int
    /// Entries dropped, oldest first, because the app already held
    /// `maxPerApp` untaken ones.
    public var dropped: Int
    /// Entries held now, waiting for a `take`.
    public var held: Int

    public init(recorded: Int = 0, dropped: Int = 0, held: Int = 0) {
        self.recorded = recorded
        self.dropped = dropped
        self.held = held
    }
}

/// Refused tokens per app, all environments together, at most `maxPerApp`
/// each (`FEEDBACK_MAX`): a full app drops its oldest entry for the new one
/// and counts it. One lock around O(1) work: a dictionary lookup and a slot
/// write in that app's ring. Alone, the store is the feedback list; in a
/// fleet (`REDIS_URL`) it is this instance's bounded buffer, which
/// `FleetFeedback` empties into the app's list in Redis.
public final class FeedbackStore: Sendable {
    public let maxPerApp: Int
    private let apps = Locked<[String: FeedbackRing]>([:])

    /// `maxPerApp` 0 keeps nothing: every entry is dropped and counted.
    public init(maxPerApp: Int) {
        precondition(maxPerApp >= 0, "FeedbackStore: maxPerApp is \(maxPerApp), must be 0 or more")
        self.maxPerApp = maxPerApp
    }

    /// Keeps `entry` under its app, dropping that app's oldest when full.
    public func record(_ entry: FeedbackEntry) {
        let limit = maxPerApp
        apps.withLock { apps in
            // Mutating through the dictionary's default subscript keeps the
            // ring uniquely referenced, so its storage is written in place.
            apps[entry.app, default: FeedbackRing()].append(entry, limit: limit)
        }
    }

    /// Returns and clears every entry held for `app`, in the order recorded
    /// (oldest first). An app with none (or unknown) gives [].
    public func take(app: String) -> [FeedbackEntry] {
        apps.withLock { apps in
            apps[app]?.takeAll() ?? []
        }
    }

    /// Returns and clears the oldest `limit` entries held for `app` (all of
    /// them when it holds fewer), oldest first. `counted` is told how many,
    /// under the store's lock: a holder that counts them elsewhere (entries
    /// on their way to Redis) is never seen by a `heldCount` reader to hold
    /// fewer than it does.
    public func take(app: String, limit: Int, counted: (Int) -> Void = { _ in }) -> [FeedbackEntry] {
        apps.withLock { apps in
            let taken = apps[app]?.take(limit: limit) ?? []
            counted(taken.count)
            return taken
        }
    }

    /// The apps holding entries now, for a flusher's round.
    public func appsHolding() -> [String] {
        apps.withLock { apps in apps.compactMap { $0.value.isEmpty ? nil : $0.key } }
    }

    /// The entries held now, every app together.
    public var heldCount: Int {
        apps.withLock { apps in apps.values.reduce(0) { $0 + $1.counts.held } }
    }

    /// Counts `count` entries of `app` dropped elsewhere (the fleet's list
    /// in Redis trimmed to `FEEDBACK_MAX` by this instance's write), so the
    /// dropped count stays the one place an operator looks.
    public func countDropped(_ count: Int, app: String) {
        guard count > 0 else { return }
        apps.withLock { apps in apps[app, default: FeedbackRing()].countDropped(count) }
    }

    /// Counts `count` entries of `app` recorded elsewhere (appended to the
    /// fleet's list in Redis with their asynchronous entry's
    /// acknowledgement, never held here), so the recorded count stays the
    /// one place an operator looks.
    public func countRecorded(_ count: Int, app: String) {
        guard count > 0 else { return }
        apps.withLock { apps in apps[app, default: FeedbackRing()].countRecorded(count) }
    }

    /// The counts of one app (zeros for an app never seen).
    public func counts(app: String) -> FeedbackCounts {
        apps.withLock { $0[app]?.counts ?? FeedbackCounts() }
    }

    /// The counts of every app the store has seen, for a metrics scrape.
    public func allCounts() -> [String: FeedbackCounts] {
        apps.withLock { apps in apps.mapValues(\.counts) }
    }
}

/// One app's entries: a ring over an array that grows to the limit and is
/// then overwritten at `head`, the oldest entry.
struct FeedbackRing {
    private var storage: [FeedbackEntry] = []
    /// Index of the oldest entry once `storage` is full; 0 before.
    private var head = 0
    private(set) var recorded = 0
    private(set) var dropped = 0

    var counts: FeedbackCounts { FeedbackCounts(recorded: recorded, dropped: dropped, held: storage.count) }
    var isEmpty: Bool { storage.isEmpty }

    mutating func countDropped(_ count: Int) { dropped += count }
    mutating func countRecorded(_ count: Int) { recorded += count }

    mutating func append(_ entry: FeedbackEntry, limit: Int) {
        recorded += 1
        guard limit > 0 else {
            dropped += 1
            return
        }
        if storage.count < limit {
            storage.append(entry)
        } else {
            storage[head] = entry
            head = head + 1 == storage.count ? 0 : head + 1
            dropped += 1
        }
    }

    /// The entries oldest first; the ring is empty afterwards. Unwrapped
    /// storage is handed over as it is, without a copy.
    mutating func takeAll() -> [FeedbackEntry] {
        var result: [FeedbackEntry] = []
        swap(&result, &storage)
        if head != 0 {
            result = Array(result[head...] + result[..<head])
            head = 0
        }
        return result
    }

    /// The oldest `limit` entries, oldest first; the rest stay, in order.
    mutating func take(limit: Int) -> [FeedbackEntry] {
        guard limit < storage.count else { return takeAll() }
        guard limit > 0 else { return [] }
        var ordered = takeAll()
        let taken = Array(ordered[..<limit])
        ordered.removeFirst(limit)
        storage = ordered
        return taken
    }
}
