// Fuzz target fleet-values: what an instance reads back from Redis, which
// another instance (or whoever can write to Redis) wrote: a feedback list's
// value (`decodeFeedbackValue`, Sources/Fleet/FeedbackValue.swift), an
// asynchronous notification's stream fields (`AsyncNotification(fields:)`,
// Sources/AsyncPush/AsyncNotification+Fields.swift), the stream replies that
// carry them (`StreamEntry.readReply`, `.autoclaimReply`,
// Sources/Fleet/StreamEntry.swift), and the acknowledgement script's reply
// (`StreamAcknowledgement.outcome`, Sources/Fleet/StreamAcknowledgement.swift),
// and a service account's shared FCM access token (`SharedAccessToken.decode`,
// Sources/Fleet/SharedAccessToken.swift).
//
// Input: [mode][rest].
// - mode 3 (mod 4): the rest draws a reply value (below), read as a read's
//   reply, a claim's and an acknowledgement's.
// - mode 5 (mod 8): the rest is a shared FCM access token's value.
// - else mode even: the rest is a feedback value.
// - else (1 mod 8): the rest is a stream entry's fields, each
//   [name length byte][name][value length: 2 bytes][value].
//
// A reply value is drawn as [kind byte] then: 0 null, 1 an integer
// (8 bytes), 2 a bulk string and 3 a status ([length byte][bytes]), 4 an
// array ([count byte mod 8] values, four deep at most), 5 a stream id
// ([ms byte][sequence byte]); what is left is an empty array.
//
// Checked (a trap on violation): never a crash or hang; a refusal's text is
// one line that never quotes a value (a token, a payload); what decodes is
// written again by the relay's own encoder and reads back to itself; every
// entry a reply yields has a stream id, a delivery count that is none or at
// least 1 (exactly 1 for a read), no more entries than the reply had
// elements, and a claim's counts only where the reply gave one per entry;
// an acknowledgement's reply, when made out, names only feedback its
// acknowledgement carried, every app of it once with counts of 0 or more,
// and a refusal of one short line.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md), like redis-reply; a
// plain `swift build` makes a replay tool of it:
// `fleet-values-fuzzer <input file>…`.

import AsyncPush
import Feedback
import FCMCore
import Fleet
import FuzzSupport
import Redis

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    if mode % 4 == 3 {
        let reply = replyValue(&input, depth: 0)
        checkStreamReply(reply)
        checkAcknowledgementReply(reply)
    } else if mode % 2 == 0 {
        checkFeedbackValue(input.rest())
    } else if mode % 8 == 5 {
        checkSharedAccessToken(input.rest())
    } else {
        var fields: [(name: [UInt8], value: [UInt8])] = []
        while input.remainingCount > 0 && fields.count < 64 {
            let name = input.bytes(Int(input.byte()))
            let value = input.bytes(input.uint16())
            fields.append((name, value))
        }
        checkStreamFields(fields)
    }
    return 0
}

private func checkFeedbackValue(_ value: [UInt8]) {
    switch decodeFeedbackValue(value, app: "app") {
    case .success(let entry):
        let again = feedbackValue(entry)
        require(decodeFeedbackValue(again, app: "app") == .success(entry),
                "\(describe(value)) decoded, written again as \(describe(again)), did not read back")
    case .failure(let error):
        checkRefusal(error.description, input: value)
    }
}

/// What decodes is a bearer token (a header's value as it is) or a
/// renewing instance's name, and is written back to the same bytes.
private func checkSharedAccessToken(_ value: [UInt8]) {
    switch SharedAccessToken.decode(value) {
    case .success(let shared):
        if case .token(let token, _) = shared {
            require(OAuthAccessToken.isBearerToken(token), "\(describe(value)) decoded to a token that is no bearer token")
        }
        require(shared.encoded == value || SharedAccessToken.decode(shared.encoded) == .success(shared),
                "\(describe(value)) decoded, written again as \(describe(shared.encoded)), did not read back")
    case .failure(let error):
        checkRefusal(error.description, input: value)
    }
}

private func checkStreamFields(_ fields: [(name: [UInt8], value: [UInt8])]) {
    do throws(AsyncNotification.DecodingError) {
        let queued = try AsyncNotification(fields: fields)
        let written = queued.fields
        do throws(AsyncNotification.DecodingError) {
            let again = try AsyncNotification(fields: written)
            let rewritten = again.fields
            require(rewritten.count == written.count
                        && zip(rewritten, written).allSatisfy { $0.name == $1.name && $0.value == $1.value },
                    "an entry written again changed")
        } catch {
            require(false, "an entry written again did not read back: \(error)")
        }
    } catch {
        for field in fields where field.value.count >= 8 {
            checkRefusal(error.description, input: field.value)
        }
        checkRefusal(error.description, input: [])
    }
}

private func replyValue(_ input: inout FuzzInput, depth: Int) -> RedisValue {
    guard input.remainingCount > 0 else { return .array([]) }
    switch input.byte() % 6 {
    case 0: return .null
    case 1: return .integer(Int64(truncatingIfNeeded: input.int64()))
    case 2: return .bulkString(input.bytes(Int(input.byte())))
    case 3: return .status(String(decoding: input.bytes(Int(input.byte())), as: UTF8.self))
    case 4:
        guard depth < 4 else { return .array([]) }
        let count = Int(input.byte() % 8)
        return .array((0..<count).map { _ in replyValue(&input, depth: depth + 1) })
    default: return .bulkString("\(input.byte())-\(input.byte())")
    }
}

private func isStreamID(_ id: String) -> Bool {
    let parts = id.split(separator: "-", omittingEmptySubsequences: false)
    return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0 >= "0" && $0 <= "9" } }
}

private func checkStreamReply(_ reply: RedisValue) {
    if let (entries, skipped) = StreamEntry.readReply(reply) {
        let elements = (reply.array ?? []).reduce(0) { sum, stream in
            let list = stream.array?.last ?? .null
            return sum + (list.array?.count ?? (list.isNull ? 0 : 1))
        }
        require(entries.count + skipped == elements,
                "a read reply gave \(entries.count) entries and \(skipped) skipped from \(elements) elements")
        for entry in entries {
            require(isStreamID(entry.id), "a read entry's id is no stream id: \(entry.id)")
            require(entry.deliveries == 1, "a read entry's deliveries: \(String(describing: entry.deliveries))")
        }
    }
    if let (cursor, entries, skipped) = StreamEntry.autoclaimReply(reply) {
        require(isStreamID(cursor), "a claim's cursor is no stream id: \(cursor)")
        let parts = reply.array ?? []
        let elements = parts.count >= 2 ? (parts[1].array?.count ?? (parts[1] == .null ? 0 : 1)) : 0
        require(entries.count + skipped == elements,
                "a claim gave \(entries.count) entries and \(skipped) skipped from \(elements) elements")
        let counted = parts.count >= 4 && parts[3].array?.count == parts[1].array?.count
        for entry in entries {
            require(isStreamID(entry.id), "a claimed entry's id is no stream id: \(entry.id)")
            if let deliveries = entry.deliveries {
                require(deliveries >= 1 && counted, "a claimed entry's deliveries \(deliveries) without a count for it")
            }
        }
    }
}

/// An acknowledgement of four entries, three with feedback of two apps.
private let acknowledged: [StreamAck] = {
    let store = FeedbackStore(maxPerApp: 10)
    func feedback(_ app: String, _ token: String) -> StreamAck.Feedback {
        StreamAck.Feedback(entry: FeedbackEntry(app: app, environment: .production, token: token, reason: "Unregistered",
                                                time: 1), store: store)
    }
    return [StreamAck(id: "1-1"), StreamAck(id: "1-2", feedback: feedback("a", "t2")),
            StreamAck(id: "1-3", feedback: feedback("b", "t3")), StreamAck(id: "1-4", feedback: feedback("a", "t4"))]
}()

private func checkAcknowledgementReply(_ reply: RedisValue) {
    guard let outcome = StreamAcknowledgement.outcome(of: reply, acks: acknowledged) else { return }
    let carried = acknowledged.compactMap(\.feedback?.entry.token)
    require(outcome.notAppended.allSatisfy { carried.contains($0.entry.token) },
            "an acknowledgement's reply named feedback it did not carry")
    require(outcome.lists.map(\.app) == ["a", "b"], "an acknowledgement's lists: \(outcome.lists.map(\.app))")
    require(outcome.lists.allSatisfy { $0.appended >= 0 && $0.dropped >= 0 }, "a negative count of an acknowledgement")
    // Cut at the limit in bytes; a cut sequence reads as one U+FFFD (3 bytes).
    require(outcome.refusal.utf8.count <= StreamAcknowledgement.refusalLimit * 3
                && !outcome.refusal.utf8.contains(UInt8(ascii: "\n"))
                && !outcome.refusal.utf8.contains(UInt8(ascii: "\r")),
            "an acknowledgement's refusal is not one short line")
}

/// The fixed words of the stream values' refusals that a value can match.
private let refusalWords = [
    "neither production nor development", "not a device token (hex, at most", "not an FCM registration token",
    "not an FCM request", "a message to another token than tok's", "a header name that is not lowercase letters, digits and -",
    "control characters in a value", "not an integer in", "a line without ':'", "repeated", "missing", "not UTF-8",
]

/// One line, and no value of 8 bytes or more quoted in it.
private func checkRefusal(_ text: String, input: [UInt8]) {
    require(!text.utf8.contains(UInt8(ascii: "\n")) && !text.utf8.contains(UInt8(ascii: "\r")),
            "a refusal of two lines: \(text)")
    // A value that is part of a refusal's own words (`producti` in "neither
    // production nor development") is not quoted.
    let value = String(decoding: input, as: UTF8.self)
    if input.count >= 8, input.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }), !refusalWords.contains(where: { $0.contains(value) }) {
        require(!containsBytes(text, value), "a refusal quotes the value: \(text)")
    }
}

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFleetValues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum FleetValuesReplay {
    static func main() { replayInputFiles(tool: "fleet-values-fuzzer", fuzzOne) }
}
#endif
