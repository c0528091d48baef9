// Fuzz target fleet-values: what an instance reads back from Redis, which
// another instance (or whoever can write to Redis) wrote: a feedback list's
// value (`decodeFeedbackValue`, Sources/Fleet/FeedbackValue.swift) and an
// asynchronous notification's stream fields (`AsyncQueuedNotification(fields:)`,
// Sources/Delivery/AsyncQueuedNotification.swift).
//
// Input: [mode][rest].
// - mode even: the rest is a feedback value.
// - mode odd: the rest is a stream entry's fields, each
//   [name length byte][name][value length: 2 bytes][value].
//
// Checked (a trap on violation): never a crash or hang; a refusal's text is
// one line that never quotes a value (a token, a payload); what decodes is
// written again by the relay's own encoder and reads back to itself.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md), like redis-reply; a
// plain `swift build` makes a replay tool of it:
// `fleet-values-fuzzer <input file>…`.

import Delivery
import Fleet
import FuzzSupport

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    if input.byte() % 2 == 0 {
        checkFeedbackValue(input.rest())
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

private func checkStreamFields(_ fields: [(name: [UInt8], value: [UInt8])]) {
    do throws(AsyncQueuedNotification.DecodingError) {
        let queued = try AsyncQueuedNotification(fields: fields)
        let written = queued.fields
        do throws(AsyncQueuedNotification.DecodingError) {
            let again = try AsyncQueuedNotification(fields: written)
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

/// One line, and no value of 8 bytes or more quoted in it.
private func checkRefusal(_ text: String, input: [UInt8]) {
    require(!text.utf8.contains(UInt8(ascii: "\n")) && !text.utf8.contains(UInt8(ascii: "\r")),
            "a refusal of two lines: \(text)")
    if input.count >= 8, input.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }) {
        require(!containsBytes(text, String(decoding: input, as: UTF8.self)), "a refusal quotes the value: \(text)")
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
