import APNsCore
import Dispatch
import Feedback
import Fleet
import Foundation
import Locking
import Observability
import Redis
import Testing
import TestSupport

/// One instance's side of the fleet's feedback: its store, its link, its
/// flusher, and the lines it logged.
private final class Member: Sendable {
    let store: FeedbackStore
    let link: RedisLink
    let shared: FleetFeedback
    let lines = LoggedLines()

    init(_ server: RedisServer, maxPerApp: Int = 10_000, instance: String, fastFailure: Bool = false) throws {
        var settings = RedisConnectionSettings()
        if fastFailure {
            settings.commandTimeout = .milliseconds(500)
            settings.reconnectCap = .milliseconds(200)
        }
        store = FeedbackStore(maxPerApp: maxPerApp)
        link = try RedisLink(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), name: "commands", settings: settings)
        shared = FleetFeedback(store: store, link: link, instance: instance, tick: .milliseconds(20),
                               logger: lines.logger)
        shared.start()
    }

    func close() {
        shared.stop()
        link.close()
    }

    /// A pull, waited for (at most 20 s).
    func pull(_ app: String = "toot") -> FeedbackPull? {
        let result = Locked<FeedbackPull?>(nil)
        let done = DispatchSemaphore(value: 0)
        shared.pull(app: app) { pull in
            result.withLock { $0 = pull }
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else { return nil }
        return result.withLock { $0 }
    }

    func record(_ numbers: some Sequence<Int>, app: String = "toot") {
        for number in numbers { store.record(feedbackEntry(number, app: app)) }
    }
}

private func feedbackEntry(_ number: Int, app: String = "toot") -> FeedbackEntry {
    FeedbackEntry(app: app, environment: number % 2 == 0 ? .production : .development,
                  token: String(format: "%064x", number), reason: "Unregistered", time: Int64(number))
}

@Suite("Fleet feedback: the instances' entries in one list per app in Redis", .serialized)
struct FleetFeedbackTests {
    @Test("recorded entries reach Redis soon, a pull on another instance returns each once, and a second pull none")
    func recordedThenPulledElsewhere() throws {
        let server = try RedisServer()
        let one = try Member(server, instance: "one")
        let two = try Member(server, instance: "two")
        defer { one.close(); two.close() }
        one.record(1...50)
        #expect(eventually(timeout: .seconds(10)) { one.shared.unflushed == 0 })
        #expect(one.link.run("LLEN", FleetKeys.feedback(app: "toot")) == .success(.integer(50)))
        #expect(one.link.run("LINDEX", FleetKeys.feedback(app: "toot"), "0")
            == .success(.bulkString(feedbackValue(feedbackEntry(1)))))
        two.record(51...60)
        let pull = try #require(two.pull())
        #expect(pull.redisFailure == nil)
        #expect(pull.entries == (1...60).map { feedbackEntry($0) })
        #expect(two.pull()?.entries == [])
        #expect(one.store.counts(app: "toot") == FeedbackCounts(recorded: 50, dropped: 0, held: 0))
        #expect(one.lines.all.isEmpty && two.lines.all.isEmpty)
    }

    @Test("pulls from several threads on several instances, while entries are recorded, never duplicate or lose one")
    func concurrentPullsNeitherDuplicateNorLose() throws {
        let server = try RedisServer()
        let members = try (0..<3).map { try Member(server, instance: "member-\($0)") }
        defer { members.forEach { $0.close() } }
        let pulled = Locked<[FeedbackEntry]>([])
        let group = DispatchGroup()
        let perMember = 2_000
        // Threads of their own (not concurrentPerform, which runs as many
        // at once as there are cores): three recorders, six pullers.
        for index in 0..<9 {
            let member = members[index % 3]
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                if index < 3 {
                    for burst in stride(from: 0, to: perMember, by: 50) {
                        member.record((index * perMember + burst)..<(index * perMember + burst + 50))
                        usleep(1_000)
                    }
                    return
                }
                for _ in 0..<100_000 {
                    let done = members.allSatisfy { $0.store.counts(app: "toot").recorded == perMember }
                    if let pull = member.pull() { pulled.withLock { $0 += pull.entries } }
                    if done { return }
                }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(eventually(timeout: .seconds(10)) { members.allSatisfy { $0.shared.unflushed == 0 } })
        if let last = members[1].pull() { pulled.withLock { $0 += last.entries } }
        let tokens = pulled.withLock { $0 }.map(\.token)
        #expect(tokens.count == 3 * perMember)
        #expect(Set(tokens).count == tokens.count)
        #expect(Set(tokens) == Set((0..<(3 * perMember)).map { feedbackEntry($0).token }))
        #expect(members.allSatisfy { $0.store.counts(app: "toot").dropped == 0 })
    }

    @Test("the list keeps the newest FEEDBACK_MAX entries, and the instance whose write trimmed counts them dropped")
    func capAndDroppedCount() throws {
        let server = try RedisServer()
        let one = try Member(server, maxPerApp: 5, instance: "one")
        let two = try Member(server, maxPerApp: 5, instance: "two")
        defer { one.close(); two.close() }
        one.record(1...4)
        #expect(eventually(timeout: .seconds(10)) { one.shared.unflushed == 0 })
        two.record(5...8)
        #expect(eventually(timeout: .seconds(10)) { two.shared.unflushed == 0 })
        #expect(two.link.run("LLEN", FleetKeys.feedback(app: "toot")) == .success(.integer(5)))
        #expect(one.store.counts(app: "toot").dropped == 0)
        #expect(two.store.counts(app: "toot") == FeedbackCounts(recorded: 4, dropped: 3, held: 0))
        #expect(one.pull()?.entries == (4...8).map { feedbackEntry($0) })
    }

    @Test("a batch sent again under the same sequence is written once, and its trim counted once")
    func sameSequenceWrittenOnce() throws {
        let server = try RedisServer()
        let link = try RedisLink(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), name: "commands")
        defer { link.close() }
        let values = (1...3).map { String(decoding: feedbackValue(feedbackEntry($0)), as: UTF8.self) }
        func write(_ sequence: Int) -> Result<RedisValue, RedisError>? {
            link.run(["EVAL", FleetFeedback.writeScript, "2", FleetKeys.feedback(app: "toot"), "written", "toot",
                      String(sequence), "2", "60"] + values)
        }
        #expect(write(1) == .success(.integer(1)))
        #expect(write(1) == .success(.integer(0)))
        #expect(link.run("LLEN", FleetKeys.feedback(app: "toot")) == .success(.integer(2)))
        #expect(write(2) == .success(.integer(3)))
        #expect(link.run("HGET", "written", "toot") == .success(.bulkString("2")))
        if case .success(.integer(let ttl)) = link.run("TTL", "written") { #expect((1...60).contains(ttl)) } else {
            Issue.record("the sequences' hash has no time to live")
        }
    }

    @Test("entries recorded while Redis is away wait here, a pull meanwhile answers them from here, and the rest reach Redis when it is back")
    func redisAwayThenBack() throws {
        let server = try RedisServer(.init(appendOnly: true))
        let one = try Member(server, instance: "one", fastFailure: true)
        let two = try Member(server, instance: "two", fastFailure: true)
        defer { one.close(); two.close() }
        one.record(1...3)
        #expect(eventually(timeout: .seconds(10)) { one.shared.unflushed == 0 })
        server.kill()
        #expect(eventually(timeout: .seconds(10)) { !one.link.isConnected })
        one.record(4...6)
        usleep(200_000)
        #expect(one.shared.unflushed == 3)
        let local = try #require(one.pull())
        #expect(local.entries == (4...6).map { feedbackEntry($0) })
        #expect(local.redisFailure?.hasPrefix("Redis: ") == true)
        one.record(7...9)
        try server.restart()
        #expect(eventually(timeout: .seconds(15)) { one.shared.unflushed == 0 })
        let pull = try #require(two.pull())
        #expect(pull.redisFailure == nil)
        #expect(pull.entries == [1, 2, 3, 7, 8, 9].map { feedbackEntry($0) })
    }

    @Test("a batch out when Redis dies is kept, not answered from here, and written once when Redis is back")
    func batchOutWhenRedisDies() throws {
        let server = try RedisServer(.init(appendOnly: true))
        let one = try Member(server, instance: "one", fastFailure: true)
        defer { one.close() }
        // Redis stops answering (SIGSTOP) with the link still up: the
        // batch goes out and its reply never comes.
        let pid = try #require(server.pid)
        kill(pid, SIGSTOP)
        one.record(1...3)
        #expect(eventually(timeout: .seconds(10)) { one.lines.all.contains { $0.message.contains("not written to Redis yet") } })
        #expect(one.shared.unflushed == 3)
        kill(pid, SIGCONT)
        #expect(eventually(timeout: .seconds(15)) { one.shared.unflushed == 0 })
        #expect(one.pull()?.entries == (1...3).map { feedbackEntry($0) })
        #expect(one.lines.all.contains { $0.message.contains("written to Redis after") })
        #expect(one.lines.all.allSatisfy { !$0.message.contains(feedbackEntry(1).token) })
    }

    @Test("values in the list that are not entries are skipped with a line that shows none of them")
    func garbageSkipped() throws {
        let server = try RedisServer()
        let one = try Member(server, instance: "one")
        defer { one.close() }
        let key = FleetKeys.feedback(app: "toot")
        let good = String(decoding: feedbackValue(feedbackEntry(7)), as: UTF8.self)
        #expect(one.link.run("RPUSH", key, "garbage secret-token", good, "2 production 1 Unregistered secret-token",
                             "1 production 1 Unregistered secret\u{1}token") == .success(.integer(4)))
        let pull = try #require(one.pull())
        #expect(pull.entries == [feedbackEntry(7)])
        let lines = one.lines.messages
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.hasPrefix("feedback: skipped 1 value in app toot's list in Redis that is not an entry: ") })
        #expect(lines.allSatisfy { !$0.contains("secret") })
        #expect(one.link.run("EXISTS", key) == .success(.integer(0)))
    }

    @Test("a feedback key of another type answers this instance's entries and says why")
    func wrongTypeKey() throws {
        let server = try RedisServer()
        let one = try Member(server, instance: "one")
        defer { one.close() }
        #expect(one.link.run("SET", FleetKeys.feedback(app: "toot"), "x") == .success(.status("OK")))
        let pull = try #require(one.pull())
        #expect(pull.entries.isEmpty)
        #expect(pull.redisFailure?.contains("WRONGTYPE") == true)
    }
}
