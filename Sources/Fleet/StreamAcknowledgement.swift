import Feedback
import Redis

/// One acknowledgement of a `StreamQueue`'s done entries as a Redis
/// script, and what its reply says: the entries acknowledged and deleted,
/// and the dead tokens they carry appended to their apps' feedback lists,
/// in one step on the server. Public for the fleet-values fuzzer: the
/// reply is read back from Redis.
public enum StreamAcknowledgement {
    /// `XACK`, `XDEL` and the feedback's `RPUSH` as one step: an entry
    /// acknowledged but left in the stream would count against
    /// `maxPending` for ever, and a dead token whose entry is acknowledged
    /// while the token waits in this instance's store is lost with the
    /// instance. Only what `XACK` acknowledged here is deleted and has its
    /// feedback appended: an id this group no longer has pending was
    /// finished (deleted, its feedback appended) by whoever acknowledged it
    /// (this instance, in a try whose reply was lost, or another that
    /// claimed it), or belongs to a stream made again after Redis lost its
    /// data, where a new entry added in the same millisecond carries the old
    /// id and must not be deleted unread.
    ///
    /// KEYS[1] the stream, then the apps' feedback lists; ARGV: the group,
    /// FEEDBACK_MAX, the number of ids, the ids, then per feedback the
    /// position (1-based) of its id, the index in KEYS of its list and its
    /// value (`feedbackValue`): an acknowledgement without feedback, the
    /// common one, is its ids alone, as small as before feedback joined it.
    /// Each list grown is trimmed to the newest FEEDBACK_MAX, as the
    /// flusher's `FleetFeedback.writeScript` does. The deletion comes before
    /// the appends, and an append is `pcall`ed: a script's commands are not
    /// undone when a later one fails, so a refused append (a key of another
    /// type) must neither stop the deletion nor fail the whole reply, which
    /// would be sent again and acknowledge nothing. Returns the entries
    /// deleted, the positions of the ids whose feedback was not appended,
    /// the first refusal's text ('' for none), then per list (KEYS[2] on)
    /// the values appended to it and what its trim dropped.
    static let script = """
        local n = tonumber(ARGV[3])
        local acknowledged, done = {}, {}
        for i = 4, 3 + n do
          if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
            acknowledged[#acknowledged + 1] = ARGV[i]
            done[i - 3] = true
          end
        end
        local reply = {0, {}, ''}
        if #acknowledged > 0 then reply[1] = redis.call('XDEL', KEYS[1], unpack(acknowledged)) end
        local grown = {}
        for j = 4 + n, #ARGV, 3 do
          local position, list = tonumber(ARGV[j]), tonumber(ARGV[j + 1])
          if done[position] then
            local pushed = redis.pcall('RPUSH', KEYS[list], ARGV[j + 2])
            if type(pushed) == 'table' and pushed.err then
              reply[2][#reply[2] + 1] = position
              if reply[3] == '' then reply[3] = pushed.err end
            else
              grown[list] = (grown[list] or 0) + 1
            end
          end
        end
        for list = 2, #KEYS do
          local over = 0
          if grown[list] then
            over = redis.call('LLEN', KEYS[list]) - tonumber(ARGV[2])
            if over > 0 then redis.call('LTRIM', KEYS[list], over, -1) else over = 0 end
          end
          reply[#reply + 1] = grown[list] or 0
          reply[#reply + 1] = over
        end
        return reply
        """

    /// The `EVAL` of `script` for `acks` done in `stream`'s `group`.
    static func command(stream: String, group: String, acks: [StreamAck]) -> RedisCommand {
        var lists: [String] = []
        var maxPerApp = 0
        var feedback: [[UInt8]] = []
        for (position, ack) in acks.enumerated() {
            guard let carried = ack.feedback else { continue }
            let key = FleetKeys.feedback(app: carried.entry.app)
            let index = (lists.firstIndex(of: key) ?? lists.endIndex) + 2
            if index == lists.count + 2 { lists.append(key) }
            maxPerApp = max(maxPerApp, carried.store.maxPerApp)
            feedback.append(Array(String(position + 1).utf8))
            feedback.append(Array(String(index).utf8))
            feedback.append(feedbackValue(carried.entry))
        }
        var arguments: [[UInt8]] = [Array("EVAL".utf8), Array(script.utf8), Array(String(1 + lists.count).utf8),
                                    Array(stream.utf8)]
        arguments.reserveCapacity(arguments.count + lists.count + 3 + acks.count + feedback.count)
        for list in lists { arguments.append(Array(list.utf8)) }
        arguments.append(Array(group.utf8))
        arguments.append(Array(String(maxPerApp).utf8))
        arguments.append(Array(String(acks.count).utf8))
        for ack in acks { arguments.append(Array(ack.id.utf8)) }
        arguments += feedback
        return RedisCommand(arguments)
    }

    /// What the script's reply says of `acks`.
    public struct Outcome: Equatable, Sendable {
        /// Feedback Redis refused to append (its entry acknowledged all the
        /// same), and the first refusal's text: its first line, at most
        /// `refusalLimit` bytes, for a log line.
        public var notAppended: [StreamAck.Feedback] = []
        public var refusal = ""
        /// Per app with feedback in `acks`, in their first order: the
        /// values appended to its list, what the list's trim dropped, and
        /// the store that counts both.
        public var lists: [List] = []

        public struct List: Equatable, Sendable {
            public var app: String
            public var appended: Int
            public var dropped: Int
            public var store: FeedbackStore

            public static func == (left: List, right: List) -> Bool {
                left.app == right.app && left.appended == right.appended && left.dropped == right.dropped
                    && left.store === right.store
            }
        }
    }

    /// A refusal's text longer than this is cut: Redis' own are one short
    /// line.
    public static let refusalLimit = 200

    /// The script's reply to `command(…, acks:)` made out, or nil when it
    /// is not the shape the script gives.
    public static func outcome(of reply: RedisValue, acks: [StreamAck]) -> Outcome? {
        guard case .array(let fields) = reply, fields.count >= 3, case .integer = fields[0],
              case .array(let positions) = fields[1], let text = fields[2].bytes
        else { return nil }
        let line = text.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }.prefix(refusalLimit)
        var outcome = Outcome()
        outcome.refusal = String(decoding: line, as: UTF8.self)
        for position in positions {
            guard case .integer(let one) = position, one >= 1, one <= acks.count,
                  let feedback = acks[Int(one) - 1].feedback
            else { return nil }
            outcome.notAppended.append(feedback)
        }
        // The lists in the order `command` named them.
        var seen: Set<String> = []
        var apps: [(String, FeedbackStore)] = []
        for ack in acks {
            if let feedback = ack.feedback, seen.insert(feedback.entry.app).inserted {
                apps.append((feedback.entry.app, feedback.store))
            }
        }
        guard fields.count == 3 + 2 * apps.count else { return nil }
        for (index, (app, store)) in apps.enumerated() {
            guard case .integer(let appended) = fields[3 + 2 * index], appended >= 0,
                  case .integer(let dropped) = fields[4 + 2 * index], dropped >= 0
            else { return nil }
            outcome.lists.append(Outcome.List(app: app, appended: Int(appended), dropped: Int(dropped), store: store))
        }
        return outcome
    }
}
