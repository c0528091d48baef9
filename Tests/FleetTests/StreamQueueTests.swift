import Dispatch
@testable import Fleet
import Glibc
import Locking
import Observability
import Redis
import Testing
import TestSupport

/// The fleet's stream queue against a real redis-server: the bound across
/// instances, at-least-once hand-over of what a dead consumer held, a live
/// consumer's entries left alone, a lost group made again.
@Suite("Stream queue: work handed between instances through a Redis Stream", .serialized)
struct StreamQueueTests {
    static let stream = "toot-relay:test-stream"

    /// What a queue's consumer received, and whether it calls `done`.
    final class Received: Sendable {
        private let state = Locked<(ids: [String], claimed: Int, deliveries: [String: Int?])>(([], 0, [:]))
        var ids: [String] { state.withLock { $0.ids } }
        var claimed: Int { state.withLock { $0.claimed } }
        /// Each id's delivery count as the queue gave it, the last time.
        var deliveries: [String: Int?] { state.withLock { $0.deliveries } }
        func add(_ entries: [StreamEntry], claimed: Bool) {
            state.withLock { state in
                state.ids += entries.map(\.id)
                if claimed { state.claimed += entries.count }
                for entry in entries { state.deliveries[entry.id] = entry.deliveries }
            }
        }
    }

    static func fleet(_ server: RedisServer, name: String, claimIdle: Duration) throws -> Fleet {
        try Fleet(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), instance: name, claimIdle: claimIdle,
                  logger: LoggedLines().logger)
    }

    /// A queue whose consumer records what it gets and, when `finish`,
    /// calls `done` for it at once.
    static func queue(_ fleet: Fleet, maxPending: Int = 1_000, capacity: Int = 100, finish: Bool,
                      received: Received, logger: Logger = LoggedLines().logger) -> StreamQueue {
        let box = Locked<StreamQueue?>(nil)
        let queue = StreamQueue(fleet: fleet, stream: stream, maxPending: maxPending, capacity: capacity,
                                logger: logger) { entries, claimed in
            received.add(entries, claimed: claimed)
            if finish, let queue = box.withLock({ $0 }) { for entry in entries { queue.done(entry.id) } }
        }
        box.withLock { $0 = queue }
        return queue
    }

    static func add(_ queue: StreamQueue, _ count: Int, tag: String = "x") -> StreamQueue.AddResult? {
        let result = Locked<StreamQueue.AddResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        let entries = (0..<count).map { index in [(name: Array("n".utf8), value: Array("\(tag)\(index)".utf8))] }
        queue.add(entries) { reply in
            result.withLock { $0 = reply }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
        return result.withLock { $0 }
    }

    @Test("entries added are read, acknowledged and deleted: the stream's length is what is pending")
    func addReadDone() throws {
        let server = try RedisServer()
        let fleet = try Self.fleet(server, name: "a", claimIdle: .seconds(30))
        defer { fleet.close() }
        let received = Received()
        let queue = Self.queue(fleet, finish: true, received: received)
        queue.start()
        #expect(Self.add(queue, 250) == .added)
        #expect(eventually(timeout: .seconds(10)) { received.ids.count == 250 })
        #expect(eventually(timeout: .seconds(5)) { fleet.commands.run("XLEN", Self.stream) == .success(.integer(0)) })
        #expect(Set(received.ids).count == 250)
        #expect(queue.held == 0 && queue.claimed == 0)
    }

    @Test("the bound holds across two instances: a batch that does not fit is refused whole")
    func boundAcrossInstances() throws {
        let server = try RedisServer()
        let one = try Self.fleet(server, name: "one", claimIdle: .seconds(30))
        let two = try Self.fleet(server, name: "two", claimIdle: .seconds(30))
        defer { one.close(); two.close() }
        let received = Received()
        // Not started: nothing is read, so the stream keeps what is added.
        let first = Self.queue(one, maxPending: 10, finish: false, received: received)
        let second = Self.queue(two, maxPending: 10, finish: false, received: received)
        #expect(Self.add(first, 6) == .added)
        #expect(Self.add(second, 5) == .full)
        #expect(one.commands.run("XLEN", Self.stream) == .success(.integer(6)))
        #expect(Self.add(second, 4) == .added)
        #expect(Self.add(first, 1) == .full)
        #expect(one.commands.run("XLEN", Self.stream) == .success(.integer(10)))
    }

    @Test("entries a consumer holds without renewing are claimed by another after the idle time, and counted")
    func deadConsumersEntriesAreClaimed() throws {
        let server = try RedisServer()
        let fleet = try Self.fleet(server, name: "survivor", claimIdle: .seconds(1))
        defer { fleet.close() }
        let received = Received()
        let queue = Self.queue(fleet, finish: true, received: received)
        // A consumer that reads and then dies: it never renews nor acknowledges.
        #expect(fleet.commands.run("XGROUP", "CREATE", Self.stream, FleetKeys.consumerGroup, "0", "MKSTREAM")
            == .success(.status("OK")))
        #expect(Self.add(queue, 5) == .added)
        guard case .success(let read) = fleet.commands.run("XREADGROUP", "GROUP", FleetKeys.consumerGroup, "dead",
                                                           "COUNT", "10", "STREAMS", Self.stream, ">"),
              let streams = read.array, streams.count == 1
        else { Issue.record("the dead consumer read nothing"); return }
        let started = ContinuousClock.now
        queue.start()
        #expect(eventually(timeout: .seconds(10)) { received.ids.count == 5 })
        #expect(ContinuousClock.now - started >= .milliseconds(900), "claimed before the idle time")
        #expect(received.claimed == 5 && queue.claimed == 5)
        #expect(eventually(timeout: .seconds(5)) { fleet.commands.run("XLEN", Self.stream) == .success(.integer(0)) })
    }

    /// Entries with the ids `ids` (each its id as its one field's value),
    /// the group made from id 0, and the first `count` read by `consumer`:
    /// pending to it. False (recorded) when Redis did not do so.
    static func addAndRead(_ fleet: Fleet, ids: [String], readBy consumer: String, count: Int) -> Bool {
        for id in ids where fleet.commands.run("XADD", stream, id, "n", id) != .success(.bulkString(id)) {
            Issue.record("XADD \(id) failed")
            return false
        }
        guard fleet.commands.run("XGROUP", "CREATE", stream, FleetKeys.consumerGroup, "0") == .success(.status("OK")),
              case .success(.array(let read)) = fleet.commands.run("XREADGROUP", "GROUP", FleetKeys.consumerGroup,
                                                                   consumer, "COUNT", String(count), "STREAMS",
                                                                   stream, ">"),
              read.count == 1
        else {
            Issue.record("the group was not made, or \(consumer) read nothing")
            return false
        }
        return true
    }

    @Test("a claimed entry carries its delivery count: one more than the holders before had made it")
    func claimedEntriesCarryTheirDeliveries() throws {
        let server = try RedisServer()
        let fleet = try Self.fleet(server, name: "taker", claimIdle: .milliseconds(300))
        defer { fleet.close() }
        let group = FleetKeys.consumerGroup
        guard Self.addAndRead(fleet, ids: ["1-1", "1-2"], readBy: "dead", count: 2) else { return }
        // 1-1 as if nine holders before had stopped with it.
        #expect(fleet.commands.run("XCLAIM", Self.stream, group, "dead", "0", "1-1", "RETRYCOUNT", "10", "JUSTID")
            == .success(.array([.bulkString("1-1")])))
        let received = Received()
        let queue = Self.queue(fleet, finish: true, received: received)
        queue.start()
        #expect(eventually(timeout: .seconds(10)) { received.ids.count == 2 })
        #expect(received.claimed == 2)
        #expect(received.deliveries == ["1-1": 11, "1-2": 2])
    }

    @Test("a live consumer's held entries are renewed and never claimed by another")
    func liveConsumersEntriesStay() throws {
        let server = try RedisServer()
        let holderFleet = try Self.fleet(server, name: "holder", claimIdle: .milliseconds(600))
        let otherFleet = try Self.fleet(server, name: "other", claimIdle: .milliseconds(600))
        // The holder's links are closed below (its death); closing twice would wait for a stopped thread.
        defer { otherFleet.close() }
        let held = Received()
        let holder = Self.queue(holderFleet, finish: false, received: held)
        holder.start()
        #expect(Self.add(holder, 20) == .added)
        #expect(eventually(timeout: .seconds(10)) { held.ids.count == 20 })
        let other = Received()
        let otherQueue = Self.queue(otherFleet, finish: true, received: other)
        otherQueue.start()
        // Five times the idle time: without renewal every entry would move.
        usleep(3_000_000)
        #expect(other.ids.isEmpty && otherQueue.claimed == 0)
        #expect(holder.held == 20)
        // Once the holder stops renewing (its links closed), the other takes them.
        holderFleet.close()
        #expect(eventually(timeout: .seconds(10)) { other.ids.count == 20 })
        #expect(Set(other.ids) == Set(held.ids) && otherQueue.claimed == 20)
    }

    @Test("a Redis that lost the group (flushed) gets it made again, and entries added since are read")
    func groupMadeAgain() throws {
        let server = try RedisServer()
        let fleet = try Self.fleet(server, name: "a", claimIdle: .seconds(30))
        defer { fleet.close() }
        let received = Received()
        let lines = LoggedLines()
        let queue = Self.queue(fleet, finish: true, received: received, logger: lines.logger)
        queue.start()
        #expect(Self.add(queue, 3, tag: "before") == .added)
        #expect(eventually(timeout: .seconds(10)) { received.ids.count == 3 })
        // Their acknowledgements answered: the next read is then blocked on
        // the server, and the flush ends it.
        #expect(eventually(timeout: .seconds(5)) { fleet.commands.run("XLEN", Self.stream) == .success(.integer(0)) })
        queue.waitForAcknowledgements(timeout: .seconds(5))
        #expect(fleet.commands.run("FLUSHALL") == .success(.status("OK")))
        #expect(Self.add(queue, 4, tag: "after") == .added)
        #expect(eventually(timeout: .seconds(10)) { received.ids.count == 7 }, "\(received.ids)")
        #expect(eventually(timeout: .seconds(5)) { fleet.commands.run("XLEN", Self.stream) == .success(.integer(0)) })
        // The ended read is taken for the lost group it means, not said as
        // a failure and waited on.
        let said = lines.messages
        #expect(said.contains { $0.contains("the consumer group is gone") }, "\(said)")
        #expect(!said.contains { $0.contains("reading failed") }, "\(said)")
    }

    @Test("an acknowledgement deletes only the entries it acknowledged: an unread entry with a done id stays")
    func acknowledgementDeletesOnlyWhatItAcknowledged() throws {
        let server = try RedisServer()
        let fleet = try Self.fleet(server, name: "a", claimIdle: .seconds(30))
        defer { fleet.close() }
        let group = FleetKeys.consumerGroup
        guard Self.addAndRead(fleet, ids: ["1-1", "1-2", "1-3"], readBy: "a", count: 2) else { return }
        // 1-1 and 1-2 are pending; 1-3 was never read, as a new entry that
        // took an old id after Redis lost its data.
        let acks = [StreamAck(id: "1-1"), StreamAck(id: "1-3")]
        #expect(fleet.commands.run(StreamAcknowledgement.command(stream: Self.stream, group: group, acks: acks))
            == .success(.array([.integer(1), .array([]), .bulkString("")])))
        guard case .success(let range) = fleet.commands.run("XRANGE", Self.stream, "-", "+"),
              let entries = range.array
        else { Issue.record("XRANGE answered no array"); return }
        #expect(entries.compactMap { $0.array?.first?.string } == ["1-2", "1-3"])
        guard case .success(.array(let pending)) = fleet.commands.run("XPENDING", Self.stream, group)
        else { Issue.record("XPENDING answered no array"); return }
        #expect(pending.first == .integer(1))
    }
}
