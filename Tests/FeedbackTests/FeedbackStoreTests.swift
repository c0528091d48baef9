import APNsCore
import Feedback
import Foundation
import Locking
import RelayCore
import Testing

private func entry(_ app: String, _ number: Int, _ environment: APNsEnvironment = .production) -> FeedbackEntry {
    FeedbackEntry(app: app, environment: environment, token: String(format: "%064x", number),
                  reason: "Unregistered", time: Int64(number))
}

@Suite struct FeedbackStoreTests {
    @Test("A full app drops its oldest entries first and counts them")
    func boundDropsOldestFirst() {
        let store = FeedbackStore(maxPerApp: 3)
        for number in 1...7 { store.record(entry("toot", number)) }
        #expect(store.counts(app: "toot") == FeedbackCounts(recorded: 7, dropped: 4, held: 3))
        #expect(store.take(app: "toot").map(\.time) == [5, 6, 7])
    }

    @Test("Entries come back in the order recorded, every environment together")
    func takeIsOldestFirstAcrossEnvironments() {
        let store = FeedbackStore(maxPerApp: 10)
        store.record(entry("toot", 1, .development))
        store.record(entry("toot", 2, .production))
        store.record(entry("toot", 3, .development))
        let taken = store.take(app: "toot")
        #expect(taken.map(\.time) == [1, 2, 3])
        #expect(taken.map(\.environment) == [.development, .production, .development])
    }

    @Test("take clears what it returned, and the ring fills again from empty")
    func takeClears() {
        let store = FeedbackStore(maxPerApp: 2)
        for number in 1...5 { store.record(entry("toot", number)) }
        #expect(store.take(app: "toot").map(\.time) == [4, 5])
        #expect(store.take(app: "toot").isEmpty)
        #expect(store.counts(app: "toot").held == 0)
        store.record(entry("toot", 6))
        #expect(store.take(app: "toot").map(\.time) == [6])
        #expect(store.counts(app: "toot") == FeedbackCounts(recorded: 6, dropped: 3, held: 0))
    }

    @Test("take with a limit returns the oldest entries, and the rest stay in order, wrapped or not",
          arguments: [(recorded: 3, limit: 2), (recorded: 7, limit: 2), (recorded: 7, limit: 0), (recorded: 7, limit: 5),
                      (recorded: 7, limit: 9), (recorded: 4, limit: 4)])
    func takeWithLimit(recorded: Int, limit: Int) {
        let store = FeedbackStore(maxPerApp: 4)
        for number in 1...recorded { store.record(entry("toot", number)) }
        let held = Array(max(1, recorded - 3)...recorded).map(Int64.init)
        let first = store.take(app: "toot", limit: limit)
        #expect(first.map(\.time) == Array(held.prefix(limit)))
        #expect(store.counts(app: "toot").held == max(0, held.count - limit))
        store.record(entry("toot", 100))
        // The ring holds 4: a full one drops its oldest for 100.
        #expect(store.take(app: "toot").map(\.time) == Array((Array(held.dropFirst(limit)) + [100]).suffix(4)))
    }

    @Test("appsHolding and heldCount see only what is held; countDropped adds to an app's dropped count")
    func holdingAndDroppedElsewhere() {
        let store = FeedbackStore(maxPerApp: 4)
        #expect(store.appsHolding().isEmpty && store.heldCount == 0)
        store.record(entry("toot", 1))
        store.record(entry("toot", 2))
        store.record(entry("other", 3))
        #expect(Set(store.appsHolding()) == ["toot", "other"])
        #expect(store.heldCount == 3)
        _ = store.take(app: "other")
        #expect(store.appsHolding() == ["toot"])
        store.countDropped(5, app: "toot")
        store.countDropped(0, app: "never")
        #expect(store.counts(app: "toot") == FeedbackCounts(recorded: 2, dropped: 5, held: 2))
        #expect(store.allCounts()["never"] == nil)
    }

    @Test("Each app has its own entries, bound and counts")
    func appsAreSeparate() {
        let store = FeedbackStore(maxPerApp: 2)
        for number in 1...3 { store.record(entry("toot", number)) }
        store.record(entry("mona", 10))
        #expect(store.take(app: "mona").map(\.time) == [10])
        #expect(store.take(app: "unknown").isEmpty)
        #expect(store.take(app: "toot").map(\.time) == [2, 3])
        #expect(store.allCounts() == [
            "toot": FeedbackCounts(recorded: 3, dropped: 1, held: 0),
            "mona": FeedbackCounts(recorded: 1, dropped: 0, held: 0),
        ])
        #expect(store.counts(app: "unknown") == FeedbackCounts())
    }

    @Test("A bound of 0 keeps nothing and counts every entry dropped")
    func zeroKeepsNothing() {
        let store = FeedbackStore(maxPerApp: 0)
        store.record(entry("toot", 1))
        #expect(store.take(app: "toot").isEmpty)
        #expect(store.counts(app: "toot") == FeedbackCounts(recorded: 1, dropped: 1, held: 0))
    }

    @Test("Records and takes from several threads lose and double no entry")
    func concurrentRecordAndTake() {
        let store = FeedbackStore(maxPerApp: 1_000_000)
        let writers = 6
        let perWriter = 20_000
        let taken = TakenTokens()
        let group = DispatchGroup()
        let writing = DispatchGroup()
        for writer in 0..<writers {
            writing.enter()
            DispatchQueue.global().async(group: group) {
                for index in 0..<perWriter {
                    store.record(entry(writer.isMultiple(of: 2) ? "toot" : "mona", writer * perWriter + index))
                }
                writing.leave()
            }
        }
        // Two takers race the writers until they are done, then take the rest.
        for app in ["toot", "mona"] {
            DispatchQueue.global().async(group: group) {
                while writing.wait(timeout: .now()) == .timedOut {
                    taken.add(store.take(app: app))
                }
                taken.add(store.take(app: app))
            }
        }
        group.wait()
        let times = taken.times
        #expect(times.count == writers * perWriter)
        #expect(Set(times).count == writers * perWriter)
        let counts = store.allCounts()
        #expect(counts["toot"]?.recorded == writers / 2 * perWriter)
        #expect(counts["mona"]?.recorded == writers / 2 * perWriter)
        #expect(counts.values.allSatisfy { $0.dropped == 0 && $0.held == 0 })
    }
}

/// What the taker threads collected.
private final class TakenTokens: Sendable {
    private let state = Locked<[Int64]>([])
    func add(_ entries: [FeedbackEntry]) { state.withLock { $0.append(contentsOf: entries.map(\.time)) } }
    var times: [Int64] { state.withLock { $0 } }
}
