// Fuzz target redis-reply: hiredis' RESP reader with the relay's limits
// (`HiredisReader`, Sources/Redis/Hiredis.swift), on any bytes fed in
// pieces of random sizes, and hiredis' command formatter read back by it.
//
// Input: [mode][limits][seed: 8 bytes][rest]. limits bit 0: small limits
// (64 bytes, 8 elements), else roomy ones (64 KiB, 4,096 elements). The
// seed draws the piece sizes (1 to 64 bytes, now and then up to 4 KiB).
// - mode even: the rest is what a server sent.
// - mode odd: the rest is a command's arguments, each [length byte][bytes],
//   formatted with `RedisCommand`, then read back as a reply.
//
// Checked (a trap on violation): fed whole and fed in pieces the reader
// gives the same replies, fails or not alike, and leaves as many bytes
// unparsed; a failure is one line of text; after it, every call reports
// the same failure and nothing stays buffered; a reply keeps within the
// limits (elements counted, its strings within the byte limit); a reply
// written again as RESP reads back to itself; a formatted command reads
// back as an array of exactly its arguments, binary-safe.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `redis-reply-fuzzer <input file>…` runs the same checks on each file.

import FuzzSupport
import Redis

private let small = RedisReplyLimits(maxBytes: 64, maxElements: 8)
private let roomy = RedisReplyLimits(maxBytes: 64 << 10, maxElements: 4096)

/// What a reader made of a byte stream.
private struct Outcome: Equatable {
    var replies: [RedisValue] = []
    var failure: RedisError?
    var unparsed = 0
}

/// SplitMix64, for the piece sizes.
private struct Pieces {
    var state: UInt64

    mutating func nextSize() -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return Int((mixed >> 8) % (mixed & 0xF == 0 ? 4096 : 64)) + 1
    }
}

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let limits = input.bool() ? small : roomy
    var seed: UInt64 = 0
    for byte in input.bytes(8) { seed = seed << 8 | UInt64(byte) }
    if mode & 1 == 1 {
        checkCommand(&input)
        return 0
    }
    let stream = input.rest()
    let whole = read(stream, limits: limits) { stream.count }
    var pieces = Pieces(state: seed)
    let split = read(stream, limits: limits) { pieces.nextSize() }
    require(whole.replies == split.replies,
            "whole: \(whole.replies.count) replies, in pieces: \(split.replies.count) (\(describe(stream)))")
    require((whole.failure == nil) == (split.failure == nil),
            "whole: \(whole.failure.map(String.init(describing:)) ?? "no failure"), in pieces: \(split.failure.map(String.init(describing:)) ?? "no failure") (\(describe(stream)))")
    if whole.failure == nil {
        require(whole.unparsed == split.unparsed, "unparsed: whole \(whole.unparsed), in pieces \(split.unparsed)")
    }
    for reply in whole.replies { checkReply(reply, limits: limits) }
    return 0
}

/// Feeds `stream` in pieces of `nextSize()` bytes, taking every reply
/// after each feed.
private func read(_ stream: [UInt8], limits: RedisReplyLimits, nextSize: () -> Int) -> Outcome {
    let reader = HiredisReader(limits: limits)
    var outcome = Outcome()
    var offset = 0
    do throws(RedisError) {
        repeat {
            let count = min(nextSize(), stream.count - offset)
            try reader.feed(Array(stream[offset..<(offset + count)]))
            offset += count
            while let reply = try reader.nextReply() { outcome.replies.append(reply) }
        } while offset < stream.count
        outcome.unparsed = reader.bufferedBytes
    } catch {
        outcome.failure = error
        checkFailure(error, reader)
    }
    return outcome
}

/// A failure is one line, and the reader holds to it.
private func checkFailure(_ error: RedisError, _ reader: HiredisReader) {
    guard case .protocolError(let text) = error else {
        require(false, "a reader failure that is not a protocol error: \(error)")
        return
    }
    trace("refused: \(text)")
    require(!text.isEmpty && !text.contains("\n") && !text.contains("\r"), "a failure of several lines: \(text)")
    require(reader.failure == error, "the reader forgot its failure")
    require(reader.bufferedBytes == 0, "a failed reader still buffers \(reader.bufferedBytes) bytes")
    do throws(RedisError) {
        try reader.feed([UInt8(ascii: "+"), UInt8(ascii: "O"), UInt8(ascii: "K"), 13, 10])
        require(false, "a failed reader took more bytes")
    } catch {
        require(error == reader.failure, "feeding a failed reader: \(error)")
    }
    do throws(RedisError) {
        _ = try reader.nextReply()
        require(false, "a failed reader gave a reply")
    } catch {
        require(error == reader.failure, "reading a failed reader: \(error)")
    }
}

/// Within the limits, and written again as RESP it reads back to itself.
private func checkReply(_ reply: RedisValue, limits: RedisReplyLimits) {
    var elements = 0
    var bytes = 0
    measure(reply, elements: &elements, bytes: &bytes)
    require(elements <= limits.maxElements, "a reply of \(elements) elements under a limit of \(limits.maxElements)")
    require(bytes <= limits.maxBytes, "a reply with \(bytes) bytes of strings under a limit of \(limits.maxBytes)")
    let reader = HiredisReader(limits: RedisReplyLimits(maxBytes: 1 << 24, maxElements: 1 << 16))
    do throws(RedisError) {
        try reader.feed(resp(reply))
        let again = try reader.nextReply()
        require(again == reply, "\(reply) written again read back as \(again.map(String.init(describing:)) ?? "nothing")")
        require(reader.bufferedBytes == 0, "bytes left after a reply written again")
    } catch {
        require(false, "\(reply) written again did not read back: \(error)")
    }
}

private func measure(_ value: RedisValue, elements: inout Int, bytes: inout Int) {
    switch value {
    case .bulkString(let content): bytes += content.count
    // Each byte hiredis read is at most one scalar (a byte that is not
    // UTF-8 becomes one U+FFFD), so scalars do not exceed the wire bytes.
    case .status(let text), .error(let text): bytes += text.unicodeScalars.count
    case .array(let items):
        elements += items.count
        for item in items { measure(item, elements: &elements, bytes: &bytes) }
    case .integer, .null: break
    }
}

/// RESP2 for a value, as a server writes it.
private func resp(_ value: RedisValue) -> [UInt8] {
    let crlf: [UInt8] = [13, 10]
    switch value {
    case .bulkString(let content): return Array("$\(content.count)".utf8) + crlf + content + crlf
    case .status(let text): return Array("+\(text)".utf8) + crlf
    case .error(let text): return Array("-\(text)".utf8) + crlf
    case .integer(let number): return Array(":\(number)".utf8) + crlf
    case .null: return Array("$-1".utf8) + crlf
    case .array(let items): return Array("*\(items.count)".utf8) + crlf + items.flatMap(resp)
    }
}

/// A formatted command reads back as the array of its arguments.
private func checkCommand(_ input: inout FuzzInput) {
    var arguments: [[UInt8]] = []
    while input.remainingCount > 0 && arguments.count < 64 {
        arguments.append(input.bytes(Int(input.byte())))
    }
    if arguments.isEmpty { arguments = [[]] }
    let command = RedisCommand(arguments)
    let reader = HiredisReader()
    do throws(RedisError) {
        try reader.feed(command.encoded)
        let reply = try reader.nextReply()
        require(reply == .array(arguments.map(RedisValue.bulkString)), "a command read back as \(reply.map(String.init(describing:)) ?? "nothing")")
        require(reader.bufferedBytes == 0, "bytes left after a command")
    } catch {
        require(false, "a formatted command did not read back: \(error)")
    }
}

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRedisReply(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum RedisReplyReplay {
    static func main() { replayInputFiles(tool: "redis-reply-fuzzer", fuzzOne) }
}
#endif
