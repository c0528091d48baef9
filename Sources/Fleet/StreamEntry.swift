import Redis

/// One entry of a Redis Stream as the relay reads it: its id and its
/// field–value pairs, bytes as Redis holds them. `fields` is nil when the
/// reply carried the id but no readable fields (an entry deleted while
/// pending, or one another writer shaped wrongly): it is acknowledged and
/// dropped by whoever reads it.
public struct StreamEntry: Sendable, Equatable {
    public let id: String
    public let fields: [(name: [UInt8], value: [UInt8])]?
    /// How many times the group has handed the entry to a consumer, this
    /// time included (Redis' delivery count): 1 when read, more when taken
    /// over, one more for each holder that stopped renewing it. Nil when
    /// Redis did not say.
    public let deliveries: Int?

    public init(id: String, fields: [(name: [UInt8], value: [UInt8])]?, deliveries: Int? = nil) {
        (self.id, self.fields, self.deliveries) = (id, fields, deliveries)
    }

    public static func == (a: StreamEntry, b: StreamEntry) -> Bool {
        guard a.id == b.id, a.deliveries == b.deliveries else { return false }
        switch (a.fields, b.fields) {
        case (nil, nil): return true
        case (let x?, let y?): return x.count == y.count && zip(x, y).allSatisfy { $0.name == $1.name && $0.value == $1.value }
        default: return false
        }
    }

    /// The value of `name`, the first if repeated.
    public func value(_ name: String) -> [UInt8]? {
        let key = Array(name.utf8)
        return fields?.first { $0.name == key }?.value
    }

    /// A stream id as Redis makes them: `<milliseconds>-<sequence>`, both
    /// decimal. Anything else in an id is not used as a command argument.
    static func isValidID(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return text.utf8.count <= 41 && parts.count == 2
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }
    }

    /// The entries of one entry list (`[[id, [name, value, …]], …]`, what
    /// `XREADGROUP` gives per stream and `XAUTOCLAIM` as its second
    /// element). Defensive: an element without a valid id is skipped
    /// (counted in `skipped`, nothing of it kept); one with an id but
    /// fields of the wrong shape comes back with `fields` nil.
    /// `deliveries`: each element's delivery count, by position.
    static func entries(of list: RedisValue, deliveries: (Int) -> Int? = { _ in nil })
        -> (entries: [StreamEntry], skipped: Int) {
        guard let elements = list.array else { return ([], list.isNull ? 0 : 1) }
        var entries: [StreamEntry] = []
        entries.reserveCapacity(elements.count)
        var skipped = 0
        for (index, element) in elements.enumerated() {
            guard let pair = element.array, pair.count == 2, let id = pair[0].string, isValidID(id) else {
                skipped += 1
                continue
            }
            entries.append(StreamEntry(id: id, fields: fields(of: pair[1]), deliveries: deliveries(index)))
        }
        return (entries, skipped)
    }

    static func fields(of value: RedisValue) -> [(name: [UInt8], value: [UInt8])]? {
        guard let flat = value.array, flat.count % 2 == 0 else { return nil }
        var fields: [(name: [UInt8], value: [UInt8])] = []
        fields.reserveCapacity(flat.count / 2)
        var index = 0
        while index < flat.count {
            guard case .bulkString(let name) = flat[index], case .bulkString(let value) = flat[index + 1] else {
                return nil
            }
            fields.append((name, value))
            index += 2
        }
        return fields
    }

    /// `XREADGROUP`'s reply for one stream: `[[stream, entries]]`, or null
    /// when the block timed out. Nil: not that shape at all.
    public static func readReply(_ reply: RedisValue) -> (entries: [StreamEntry], skipped: Int)? {
        if reply.isNull { return ([], 0) }
        guard let streams = reply.array else { return nil }
        var all: [StreamEntry] = []
        var skipped = 0
        for stream in streams {
            guard let pair = stream.array, pair.count == 2, pair[0].bytes != nil else { return nil }
            // `>` reads only what the group never handed out.
            let (entries, bad) = Self.entries(of: pair[1]) { _ in 1 }
            all.append(contentsOf: entries)
            skipped += bad
        }
        return (all, skipped)
    }

    /// `XAUTOCLAIM`'s reply (Redis 7: `[cursor, entries, deleted ids]`;
    /// 6.2 has no third element), with `StreamQueue.claimScript`'s fourth,
    /// the entries' delivery counts in their order: the next cursor and the
    /// entries. A count that is not a positive integer, or counts that do
    /// not match the entries one for one, are not known.
    public static func autoclaimReply(_ reply: RedisValue) -> (cursor: String, entries: [StreamEntry], skipped: Int)? {
        guard let parts = reply.array, parts.count >= 2, let cursor = parts[0].string, isValidID(cursor) else {
            return nil
        }
        var counts: [RedisValue] = []
        if parts.count >= 4, let given = parts[3].array, given.count == parts[1].array?.count { counts = given }
        let (entries, skipped) = Self.entries(of: parts[1]) { index in
            guard index < counts.count, let count = counts[index].integer, count >= 1 else { return nil }
            return Int(exactly: count)
        }
        return (cursor, entries, skipped)
    }
}
