import Redis
import Testing

@testable import Fleet

/// Replies to `XREADGROUP` and `XAUTOCLAIM` as Redis gives them, and as
/// anyone else might: what is not an entry is skipped, never a crash.
@Suite("Stream replies read defensively")
struct StreamEntryTests {
    static func entry(_ id: String, _ fields: [String]) -> RedisValue {
        .array([.bulkString(id), .array(fields.map { .bulkString($0) })])
    }

    @Test("a read reply's entries, with their fields in order")
    func readReply() throws {
        let reply = RedisValue.array([.array([.bulkString("s"), .array([Self.entry("1-0", ["a", "1", "b", "2"])])])])
        let (entries, skipped) = try #require(StreamEntry.readReply(reply))
        #expect(skipped == 0)
        #expect(entries.count == 1 && entries[0].id == "1-0")
        #expect(entries[0].value("b") == Array("2".utf8) && entries[0].value("c") == nil)
        #expect(entries[0].deliveries == 1)
    }

    @Test("a read that timed out is no entry")
    func readTimedOut() {
        #expect(StreamEntry.readReply(.null)?.entries == [])
    }

    static let hostileElements: [(String, RedisValue, Int, Bool)] = [
        // label, element, entries kept, fields readable
        ("an id that is not a stream id", entry("1-0; FLUSHALL", ["a", "1"]), 0, false),
        ("an id of letters", entry("abc-def", ["a", "1"]), 0, false),
        ("an id without a sequence", entry("17", ["a", "1"]), 0, false),
        ("an integer for an entry", .integer(3), 0, false),
        ("an entry of three elements", .array([.bulkString("1-0"), .array([]), .null]), 0, false),
        ("fields of odd count", entry("1-0", ["a", "1", "b"]), 1, false),
        ("a field that is an integer", .array([.bulkString("1-0"), .array([.bulkString("a"), .integer(1)])]), 1, false),
        ("a deleted entry (null fields)", .array([.bulkString("1-0"), .null]), 1, false),
    ]

    @Test("a hostile element is skipped, or kept without fields to be dropped", arguments: hostileElements)
    func hostileElement(_ label: String, _ element: RedisValue, _ kept: Int, _ readable: Bool) throws {
        let reply = RedisValue.array([.array([.bulkString("s"), .array([element])])])
        let (entries, skipped) = try #require(StreamEntry.readReply(reply), "\(label)")
        #expect(entries.count == kept && skipped == 1 - kept, "\(label)")
        if let entry = entries.first { #expect((entry.fields != nil) == readable, "\(label)") }
    }

    static let notReplies: [(String, RedisValue)] = [
        ("a status", .status("OK")),
        ("an integer", .integer(1)),
        ("a stream without its entries", .array([.array([.bulkString("s")])])),
        ("a stream named by an integer", .array([.array([.integer(1), .array([])])])),
    ]

    @Test("what is no read reply at all is refused whole", arguments: notReplies)
    func notAReadReply(_ label: String, _ reply: RedisValue) {
        #expect(StreamEntry.readReply(reply) == nil, "\(label)")
    }

    @Test("an autoclaim reply: the cursor and the entries, Redis 7's deleted ids ignored; a bad cursor refused")
    func autoclaimReply() throws {
        let reply = RedisValue.array([.bulkString("5-0"), .array([Self.entry("2-1", ["x", "y"])]), .array([])])
        let (cursor, entries, skipped) = try #require(StreamEntry.autoclaimReply(reply))
        #expect(cursor == "5-0" && entries.map(\.id) == ["2-1"] && skipped == 0)
        #expect(StreamEntry.autoclaimReply(.array([.bulkString("next"), .array([])])) == nil)
        #expect(StreamEntry.autoclaimReply(.array([.bulkString("0-0")])) == nil)
    }

    static let claimCounts: [(String, RedisValue?, [Int?])] = [
        // label, the fourth element (nil: none), each entry's deliveries
        ("one count per entry", .array([.integer(8), .integer(2)]), [8, 2]),
        ("no fourth element (XAUTOCLAIM itself)", nil, [nil, nil]),
        ("fewer counts than entries", .array([.integer(8)]), [nil, nil]),
        ("more counts than entries", .array([.integer(8), .integer(2), .integer(3)]), [nil, nil]),
        ("a count of zero (not pending when counted)", .array([.integer(0), .integer(2)]), [nil, 2]),
        ("a negative count", .array([.integer(-4), .integer(2)]), [nil, 2]),
        ("a count that is a string", .array([.bulkString("8"), .integer(2)]), [nil, 2]),
        ("counts that are not an array", .integer(8), [nil, nil]),
    ]

    @Test("a claim's delivery counts belong to its entries one for one, or are not known", arguments: claimCounts)
    func claimDeliveries(_ label: String, _ counts: RedisValue?, _ expected: [Int?]) throws {
        var parts: [RedisValue] = [.bulkString("0-0"), .array([Self.entry("2-1", ["x", "y"]), Self.entry("2-2", [])]),
                                   .array([])]
        if let counts { parts.append(counts) }
        let (_, entries, skipped) = try #require(StreamEntry.autoclaimReply(.array(parts)), "\(label)")
        #expect(skipped == 0 && entries.map(\.deliveries) == expected, "\(label)")
    }

    @Test("a skipped element keeps the counts of the others in place")
    func claimDeliveriesAfterASkippedElement() throws {
        let reply = RedisValue.array([.bulkString("0-0"), .array([.integer(1), Self.entry("2-2", ["x", "y"])]),
                                      .array([]), .array([.integer(5), .integer(3)])])
        let (_, entries, skipped) = try #require(StreamEntry.autoclaimReply(reply))
        #expect(skipped == 1 && entries.map(\.id) == ["2-2"] && entries.map(\.deliveries) == [3])
    }
}
