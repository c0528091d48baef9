import Feedback
@testable import Fleet
import Redis
import Testing
import TestSupport

/// The acknowledgement script: the command it is sent as, its reply made
/// out, and what it does on a real redis-server: an entry's feedback
/// appended once, with the acknowledgement that deletes the entry, never
/// by one that acknowledges nothing; the app's list trimmed and the trim
/// counted; an append Redis refuses reported, the entry deleted all the
/// same.
@Suite("Stream acknowledgement: entries done, with their dead tokens, in one script", .serialized)
struct StreamAcknowledgementTests {
    static let stream = "toot-relay:test-ack-stream"
    static let group = FleetKeys.consumerGroup

    static func entry(_ app: String, _ token: String) -> FeedbackEntry {
        FeedbackEntry(app: app, environment: .production, token: token, reason: "Unregistered", time: 1_764_114_000_123)
    }

    static func ack(_ id: String, _ app: String? = nil, token: String = "t", store: FeedbackStore) -> StreamAck {
        StreamAck(id: id, feedback: app.map { StreamAck.Feedback(entry: entry($0, token), store: store) })
    }

    /// The command's arguments, read back from its RESP encoding
    /// (`*count`, then `$length` and the bytes of each).
    static func arguments(_ command: RedisCommand) -> [String] {
        let bytes = command.encoded
        var index = 0
        func line() -> Int {
            let start = index + 1
            while bytes[index] != UInt8(ascii: "\r") { index += 1 }
            defer { index += 2 }
            return Int(String(decoding: bytes[start..<index], as: UTF8.self)) ?? -1
        }
        var arguments: [String] = []
        for _ in 0..<line() {
            let length = line()
            arguments.append(String(decoding: bytes[index..<index + length], as: UTF8.self))
            index += length + 2
        }
        return arguments
    }

    // MARK: the command

    @Test("the command names each app's list once, in first order, the ids, and each feedback's id, list and value")
    func command() {
        let store = FeedbackStore(maxPerApp: 7)
        let acks = [Self.ack("1-1", store: store), Self.ack("1-2", "b", token: "x", store: store),
                    Self.ack("1-3", "a", token: "y", store: store), Self.ack("1-4", "b", token: "z", store: store)]
        let arguments = Self.arguments(StreamAcknowledgement.command(stream: Self.stream, group: Self.group, acks: acks))
        #expect(arguments.first == "EVAL" && arguments[1] == StreamAcknowledgement.script)
        #expect(Array(arguments.dropFirst(2)) == [
            "3", Self.stream, "toot-relay:feedback:b", "toot-relay:feedback:a", Self.group, "7",
            "4", "1-1", "1-2", "1-3", "1-4",
            "2", "2", "1 production 1764114000123 Unregistered x",
            "3", "3", "1 production 1764114000123 Unregistered y",
            "4", "2", "1 production 1764114000123 Unregistered z",
        ])
        // Without feedback: the ids alone.
        let plain = Self.arguments(StreamAcknowledgement.command(stream: Self.stream, group: Self.group,
                                                                 acks: [StreamAck(id: "1-1"), StreamAck(id: "1-2")]))
        #expect(Array(plain.dropFirst(2)) == ["1", Self.stream, Self.group, "0", "2", "1-1", "1-2"])
    }

    // MARK: the reply

    static let store = FeedbackStore(maxPerApp: 5)
    static let replyAcks = [ack("1-1", store: store), ack("1-2", "b", store: store), ack("1-3", "a", store: store)]

    static let replies: [(reply: RedisValue, notAppended: [String]?, refusal: String, lists: [(String, Int, Int)])] = [
        (.array([.integer(3), .array([]), .bulkString(""), .integer(1), .integer(0), .integer(1), .integer(2)]),
         [], "", [("b", 1, 0), ("a", 1, 2)]),
        (.array([.integer(0), .array([]), .bulkString(""), .integer(0), .integer(0), .integer(0), .integer(0)]),
         [], "", [("b", 0, 0), ("a", 0, 0)]),
        (.array([.integer(3), .array([.integer(3)]), .bulkString("WRONGTYPE x"), .integer(1), .integer(0), .integer(0),
                 .integer(0)]),
         ["a"], "WRONGTYPE x", [("b", 1, 0), ("a", 0, 0)]),
        // A refusal's text is one line for the log.
        (.array([.integer(3), .array([.integer(2), .integer(3)]), .bulkString("ERR one\r\ntwo"), .integer(0),
                 .integer(0), .integer(0), .integer(0)]),
         ["b", "a"], "ERR one", [("b", 0, 0), ("a", 0, 0)]),
        // Not the script's shape: a position without feedback, out of
        // range, a count missing or negative, another type.
        (.array([.integer(3), .array([.integer(1)]), .bulkString("e"), .integer(0), .integer(0), .integer(0), .integer(0)]),
         nil, "", []),
        (.array([.integer(3), .array([.integer(4)]), .bulkString("e"), .integer(0), .integer(0), .integer(0), .integer(0)]),
         nil, "", []),
        (.array([.integer(3), .array([]), .bulkString(""), .integer(1), .integer(0), .integer(1)]), nil, "", []),
        (.array([.integer(3), .array([]), .bulkString(""), .integer(1), .integer(0), .integer(1), .integer(-1)]),
         nil, "", []),
        (.integer(3), nil, "", []),
        (.array([.integer(3), .integer(0), .bulkString("")]), nil, "", []),
    ]

    @Test("the reply is made out per app, or refused when it is not the script's shape", arguments: replies)
    func reply(_ example: (reply: RedisValue, notAppended: [String]?, refusal: String, lists: [(String, Int, Int)])) {
        let outcome = StreamAcknowledgement.outcome(of: example.reply, acks: Self.replyAcks)
        guard let notAppended = example.notAppended else {
            #expect(outcome == nil)
            return
        }
        #expect(outcome?.notAppended.map(\.entry.app) == notAppended)
        #expect(outcome?.refusal == example.refusal)
        #expect(outcome?.lists == example.lists.map {
            StreamAcknowledgement.Outcome.List(app: $0.0, appended: $0.1, dropped: $0.2, store: Self.store)
        })
    }

    @Test("acknowledgements without feedback: the reply names no list")
    func replyWithoutFeedback() {
        let acks = [StreamAck(id: "1-1")]
        #expect(StreamAcknowledgement.outcome(of: .array([.integer(1), .array([]), .bulkString("")]), acks: acks)
            == StreamAcknowledgement.Outcome())
    }

    // MARK: on a real redis-server

    /// A redis-server of the test's own and one instance's links to it.
    struct Live {
        let server: RedisServer
        let fleet: Fleet

        init() throws {
            server = try RedisServer()
            fleet = try StreamQueueTests.fleet(server, name: "a", claimIdle: .seconds(30))
        }
    }

    /// A stream holding `ids`, every one read (pending) by one consumer.
    static func pending(_ link: RedisLink, ids: [String]) -> Bool {
        for id in ids where link.run("XADD", stream, id, "n", id) != .success(.bulkString(id)) { return false }
        return link.run("XGROUP", "CREATE", stream, group, "0") == .success(.status("OK"))
            && link.run("XREADGROUP", "GROUP", group, "c", "COUNT", "100", "STREAMS", stream, ">")?.map(\.array?.count)
                == .success(1)
    }

    static func list(_ link: RedisLink, _ app: String) -> [String] {
        guard case .success(.array(let values)) = link.run("LRANGE", FleetKeys.feedback(app: app), "0", "-1") else {
            return ["not a list"]
        }
        return values.map { $0.string ?? "?" }
    }

    static func run(_ link: RedisLink, _ acks: [StreamAck]) -> Result<RedisValue, RedisError>? {
        link.run(StreamAcknowledgement.command(stream: stream, group: group, acks: acks))
    }

    @Test("an acknowledgement appends its entries' feedback once; sent again it acknowledges and appends nothing")
    func appendsOnce() throws {
        let redis = try Live()
        defer { redis.fleet.close() }
        let link = redis.fleet.commands
        let store = FeedbackStore(maxPerApp: 10)
        #expect(Self.pending(link, ids: ["1-1", "1-2", "1-3"]))
        let acks = [Self.ack("1-1", "a", token: "t1", store: store), Self.ack("1-2", store: store),
                    Self.ack("1-3", "a", token: "t3", store: store)]
        #expect(Self.run(link, acks) == .success(.array([.integer(3), .array([]), .bulkString(""), .integer(2), .integer(0)])))
        #expect(Self.list(link, "a") == ["1 production 1764114000123 Unregistered t1",
                                          "1 production 1764114000123 Unregistered t3"])
        #expect(link.run("XLEN", Self.stream) == .success(.integer(0)))
        // The same acknowledgement again (its reply lost): nothing more.
        #expect(Self.run(link, acks) == .success(.array([.integer(0), .array([]), .bulkString(""), .integer(0), .integer(0)])))
        #expect(Self.list(link, "a").count == 2)
    }

    @Test("an entry another instance acknowledged first has its feedback appended by that one only")
    func acknowledgedElsewhere() throws {
        let redis = try Live()
        defer { redis.fleet.close() }
        let link = redis.fleet.commands
        let store = FeedbackStore(maxPerApp: 10)
        #expect(Self.pending(link, ids: ["1-1", "1-2"]))
        #expect(Self.run(link, [Self.ack("1-1", "a", token: "first", store: store)])
            == .success(.array([.integer(1), .array([]), .bulkString(""), .integer(1), .integer(0)])))
        #expect(Self.run(link, [Self.ack("1-1", "a", token: "second", store: store),
                                Self.ack("1-2", "a", token: "other", store: store)])
            == .success(.array([.integer(1), .array([]), .bulkString(""), .integer(1), .integer(0)])))
        #expect(Self.list(link, "a").map { $0.split(separator: " ").last.map(String.init) } == ["first", "other"])
    }

    @Test("each list grown is trimmed to FEEDBACK_MAX, newest kept, and what the trim dropped is answered", arguments: [
        (before: 0, maximum: 5, appended: 3, dropped: 0), (before: 2, maximum: 3, appended: 3, dropped: 2),
        (before: 4, maximum: 2, appended: 1, dropped: 3), (before: 1, maximum: 0, appended: 2, dropped: 3),
    ])
    func trim(before: Int, maximum: Int, appended: Int, dropped: Int) throws {
        let redis = try Live()
        defer { redis.fleet.close() }
        let link = redis.fleet.commands
        let store = FeedbackStore(maxPerApp: maximum)
        for index in 0..<before { _ = link.run("RPUSH", FleetKeys.feedback(app: "a"), "old\(index)") }
        // Another app's list, untouched by this acknowledgement, not trimmed.
        for index in 0..<4 { _ = link.run("RPUSH", FleetKeys.feedback(app: "z"), "z\(index)") }
        let ids = (1...appended).map { "1-\($0)" }
        #expect(Self.pending(link, ids: ids))
        let acks = ids.map { Self.ack($0, "a", token: "new\($0)", store: store) }
        #expect(Self.run(link, acks) == .success(.array([.integer(Int64(appended)), .array([]), .bulkString(""),
                                                         .integer(Int64(appended)), .integer(Int64(dropped))])))
        let all = (0..<before).map { "old\($0)" } + ids.map { "1 production 1764114000123 Unregistered new\($0)" }
        #expect(Self.list(link, "a") == Array(all.suffix(maximum)))
        #expect(dropped == max(0, all.count - maximum))
        #expect(Self.list(link, "z").count == 4)
    }

    @Test("an append Redis refuses (a key of another type) is answered; the entry is deleted all the same")
    func refusedAppend() throws {
        let redis = try Live()
        defer { redis.fleet.close() }
        let link = redis.fleet.commands
        let store = FeedbackStore(maxPerApp: 10)
        #expect(link.run("SET", FleetKeys.feedback(app: "bad"), "a string") == .success(.status("OK")))
        #expect(Self.pending(link, ids: ["1-1", "1-2"]))
        let acks = [Self.ack("1-1", "bad", store: store), Self.ack("1-2", "a", token: "fine", store: store)]
        guard case .success(let reply) = Self.run(link, acks),
              let outcome = StreamAcknowledgement.outcome(of: reply, acks: acks)
        else { Issue.record("the script answered no reply of its shape"); return }
        #expect(outcome.notAppended.map(\.entry.app) == ["bad"])
        #expect(outcome.refusal.hasPrefix("WRONGTYPE"))
        #expect(outcome.lists.map(\.appended) == [0, 1])
        #expect(link.run("XLEN", Self.stream) == .success(.integer(0)))
        #expect(Self.list(link, "a").count == 1)
    }

    @Test("through the queue: done with feedback lands in the app's list, counted recorded and dropped in the store")
    func throughTheQueue() throws {
        let redis = try Live()
        defer { redis.fleet.close() }
        let fleet = redis.fleet
        let store = FeedbackStore(maxPerApp: 2)
        let received = StreamQueueTests.Received()
        let queue = StreamQueueTests.queue(fleet, finish: false, received: received)
        let stream = StreamQueueTests.stream
        #expect(StreamQueueTests.add(queue, 3) == .added)
        queue.start()
        #expect(eventually(timeout: .seconds(10)) { received.ids.count == 3 })
        for (index, id) in received.ids.enumerated() {
            queue.done(id, feedback: StreamAck.Feedback(entry: Self.entry("q", "t\(index)"), store: store))
        }
        queue.waitForAcknowledgements(timeout: .seconds(5))
        #expect(Self.list(fleet.commands, "q").map { String($0.suffix(2)) } == ["t1", "t2"])
        #expect(fleet.commands.run("XLEN", stream) == .success(.integer(0)))
        #expect(store.counts(app: "q") == FeedbackCounts(recorded: 3, dropped: 1, held: 0))
    }
}
