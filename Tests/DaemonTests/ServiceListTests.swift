@testable import Daemon
import EventLoop
import Glibc
import Locking
import Observability
import Testing

/// What the services of a test did, in order.
private final class Journal: Sendable {
    private let entries = Locked<[String]>([])
    var all: [String] { entries.withLock { $0 } }
    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
}

/// A service that records each call; drained once `drainedAfter` polls of
/// `isDrained` have answered false (nil: never).
private final class RecordingService: Service {
    let name: String
    let journal: Journal
    private let drainedAfter: Int?
    private var polls = 0
    private(set) var grace: GracePeriod?

    init(_ name: String, _ journal: Journal, drainedAfter: Int? = 0) {
        self.name = name
        self.journal = journal
        self.drainedAfter = drainedAfter
    }

    func stopAccepting() { journal.record("\(name) stops accepting") }

    var isDrained: Bool {
        guard let drainedAfter else { return false }
        polls += 1
        return polls > drainedAfter
    }

    func stop(_ grace: GracePeriod) {
        self.grace = grace
        journal.record("\(name) stops")
    }

    func tick(now: Int) { journal.record("\(name) ticks at \(now)") }
}

/// A list whose wait for a second signal sleeps 10 ms (what the list asks
/// for) and sees none, unless `interruption` says otherwise.
private func list(interruption: @escaping (Duration) -> Int32? = { _ in usleep(10_000); return nil },
                  log: Journal = Journal()) -> ServiceList {
    let logger = Logger(level: .info) { bytes in log.record(String(decoding: bytes, as: UTF8.self)) }
    return ServiceList(logger: logger, interruption: interruption)
}

@Suite("The daemon's services, stopped in the reverse of their start")
struct ServiceListTests {
    @Test("every service stops accepting, the last started first, before any stops; then each stops in that order")
    func twoPassesInReverse() {
        let journal = Journal()
        let services = list()
        for name in ["loops", "clients", "listener"] { services.append(RecordingService(name, journal)) }
        services.shutDown(grace: .seconds(5))
        #expect(journal.all == [
            "listener stops accepting", "clients stops accepting", "loops stops accepting",
            "listener stops", "clients stops", "loops stops",
        ])
        #expect(services.count == 0)
    }

    @Test("the wait lasts until every service has drained, within the grace period")
    func waitsForTheDrain() {
        let journal = Journal()
        let services = list()
        let slow = RecordingService("listener", journal, drainedAfter: 5)
        services.append(RecordingService("loops", journal))
        services.append(slow)
        let started = EventLoop.monotonicNanoseconds()
        services.shutDown(grace: .seconds(30))
        let elapsed = EventLoop.monotonicNanoseconds() - started
        // Five polls 10 ms apart, then the second pass at once: far from the grace.
        #expect(elapsed >= 40_000_000 && elapsed < 10_000_000_000)
        #expect(slow.grace?.cutShort == false)
        #expect(journal.all.suffix(2) == ["listener stops", "loops stops"])
    }

    @Test("a service that never drains is waited for until the grace period ends, then stopped")
    func graceEnds() throws {
        let journal = Journal()
        let services = list()
        let stuck = RecordingService("listener", journal, drainedAfter: nil)
        services.append(stuck)
        let started = EventLoop.monotonicNanoseconds()
        services.shutDown(grace: .milliseconds(200))
        let elapsed = EventLoop.monotonicNanoseconds() - started
        #expect(elapsed >= 200_000_000 && elapsed < 5_000_000_000)
        let grace = try #require(stuck.grace)
        #expect(!grace.cutShort)
        #expect(grace.deadline <= EventLoop.monotonicNanoseconds())
        #expect(journal.all == ["listener stops accepting", "listener stops"])
    }

    @Test("a second SIGTERM or SIGINT cuts the wait short, says so, and the second pass knows", arguments: [SIGTERM, SIGINT])
    func secondSignal(_ signal: Int32) {
        let journal = Journal(), log = Journal()
        var waits = 0
        let services = list(interruption: { _ in
            waits += 1
            return waits == 3 ? signal : nil
        }, log: log)
        let stuck = RecordingService("listener", journal, drainedAfter: nil)
        services.append(stuck)
        services.shutDown(grace: .seconds(60))
        #expect(waits == 3)
        #expect(stuck.grace?.cutShort == true)
        let name = signal == SIGTERM ? "SIGTERM" : "SIGINT"
        #expect(log.all.contains { $0.contains("warning \(name) again: not waiting for the grace period") })
    }

    @Test("a grace of zero (a start-up that failed) does not wait")
    func zeroGrace() {
        let journal = Journal()
        var waits = 0
        let services = list(interruption: { _ in
            waits += 1
            return nil
        })
        services.append(RecordingService("listener", journal, drainedAfter: nil))
        services.shutDown(grace: .zero)
        #expect(waits == 0)
        #expect(journal.all == ["listener stops accepting", "listener stops"])
    }

    @Test("each tick reaches every service in the order they started")
    func ticks() {
        let journal = Journal()
        let services = list()
        for name in ["fleet", "loops"] { services.append(RecordingService(name, journal)) }
        services.tick(now: 1_800_000_000)
        #expect(journal.all == ["fleet ticks at 1800000000", "loops ticks at 1800000000"])
    }
}
