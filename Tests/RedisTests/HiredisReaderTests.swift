import Testing
import TestSupport
@testable import Redis

/// Every reply of `bytes`, fed whole; throws the reader's failure.
private func replies(_ bytes: [UInt8], limits: RedisReplyLimits = .default) throws(RedisError) -> [RedisValue] {
    let reader = HiredisReader(limits: limits)
    try reader.feed(bytes)
    var values: [RedisValue] = []
    while let value = try reader.nextReply() { values.append(value) }
    return values
}

private func replies(_ text: String, limits: RedisReplyLimits = .default) throws(RedisError) -> [RedisValue] {
    try replies(Array(text.utf8), limits: limits)
}

/// The failure `bytes` end in, or nil.
private func failure(_ bytes: [UInt8], limits: RedisReplyLimits = .default) -> RedisError? {
    do throws(RedisError) {
        _ = try replies(bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}

@Suite("hiredis reader and formatter")
struct HiredisReaderTests {
    @Test("each RESP2 reply type becomes its value", arguments: [
        ("+OK\r\n", RedisValue.status("OK")),
        ("+\r\n", .status("")),
        ("-ERR unknown command 'FOO'\r\n", .error("ERR unknown command 'FOO'")),
        (":42\r\n", .integer(42)),
        (":-9223372036854775808\r\n", .integer(.min)),
        (":9223372036854775807\r\n", .integer(.max)),
        ("$5\r\nhello\r\n", .bulkString("hello")),
        ("$0\r\n\r\n", .bulkString([])),
        ("$-1\r\n", .null),
        ("*-1\r\n", .null),
        ("*0\r\n", .array([])),
        ("*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", .array([.bulkString("a"), .integer(1), .null])),
        ("*2\r\n*1\r\n+x\r\n*2\r\n-E\r\n:0\r\n", .array([.array([.status("x")]), .array([.error("E"), .integer(0)])])),
        // XREADGROUP's shape: streams, stream, entries, entry, fields (5 deep).
        ("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
         .array([.array([.bulkString("s"), .array([.array([.bulkString("1-0"), .array([.bulkString("f"), .bulkString("v")])])])])])),
    ])
    func replyTypes(_ text: String, _ expected: RedisValue) throws {
        #expect(try replies(text) == [expected])
    }

    @Test("bulk strings are binary-safe: NUL, CR LF and bytes that are not UTF-8")
    func binarySafe() throws {
        let value: [UInt8] = [0, 13, 10, 0xFF, 0xFE, UInt8(ascii: "$"), 13, 10]
        let reply = try replies(Array("$8\r\n".utf8) + value + [13, 10])
        #expect(reply == [.bulkString(value)])
        #expect(reply[0].string == nil)
        #expect(reply[0].bytes == value)
    }

    @Test("pipelined replies come out in order, fed whole or a byte at a time")
    func pipelinedAndSplit() throws {
        var stream: [UInt8] = []
        var expected: [RedisValue] = []
        for index in 0..<200 {
            stream += Array(":\(index)\r\n$3\r\nv\(index % 10)x\r\n".utf8)
            expected += [.integer(Int64(index)), .bulkString("v\(index % 10)x")]
        }
        #expect(try replies(stream) == expected)
        let reader = HiredisReader()
        var split: [RedisValue] = []
        for byte in stream {
            try reader.feed([byte])
            while let value = try reader.nextReply() { split.append(value) }
        }
        #expect(split == expected)
        #expect(reader.bufferedBytes == 0)
    }

    @Test("an incomplete reply waits for its bytes", arguments: ["+OK", "+OK\r", "$5\r\nhel", "*2\r\n:1\r\n", "$-", ":12"])
    func incomplete(_ text: String) throws {
        let reader = HiredisReader()
        try reader.feed(Array(text.utf8))
        #expect(try reader.nextReply() == nil)
        #expect(reader.failure == nil)
    }

    @Test("garbage is a protocol error naming what is wrong", arguments: [
        ("x\r\n", "Protocol error, got \"x\" as reply type byte"),
        ("\0", "Protocol error, got \"\\x00\" as reply type byte"),
        ("$-5\r\n", "Bulk string length out of range"),
        ("$abc\r\n", "Bad bulk string length"),
        ("*99999999999\r\n", "Multi-bulk length out of range"),
        ("*-2\r\n", "Multi-bulk length out of range"),
        (":abc\r\n", "Bad integer value"),
        (":99999999999999999999\r\n", "Bad integer value"),
        (String(repeating: "*1\r\n", count: 10_000) + ":1\r\n", "No support for nested multi bulk replies with depth > 7"),
        ("+OK\r\n:1\r\n?\r\n", "Protocol error, got \"?\" as reply type byte"),
    ])
    func garbage(_ text: String, _ message: String) {
        #expect(failure(Array(text.utf8)) == .protocolError(message))
    }

    @Test("a count past the element limit is refused before hiredis allocates for it")
    func hugeArrayCount() throws {
        // 2^31 − 1 elements: hiredis' own reply functions would calloc 16 GiB.
        #expect(failure(Array("*2147483647\r\n".utf8)) == .protocolError("a reply of more than 1048576 elements"))
        let limits = RedisReplyLimits(maxBytes: 1 << 20, maxElements: 3)
        #expect(try replies("*3\r\n:1\r\n:2\r\n:3\r\n*3\r\n:4\r\n:5\r\n:6\r\n", limits: limits).count == 2)
        // Nested counts add up: 2 + 2 > 3.
        #expect(failure(Array("*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n".utf8), limits: limits)
            == .protocolError("a reply of more than 3 elements"))
    }

    @Test("the byte limit is on a reply's size on the wire, whatever the chunking")
    func byteLimit() throws {
        let eleven = Array("$5\r\nhello\r\n".utf8)
        #expect(try replies(eleven + eleven, limits: RedisReplyLimits(maxBytes: 11, maxElements: 8)).count == 2)
        #expect(failure(eleven, limits: RedisReplyLimits(maxBytes: 10, maxElements: 8))
            == .protocolError("a reply of more than 10 bytes"))
        // An array's items parsed already count too (hiredis consumes them).
        let array = Array("*3\r\n:1\r\n:2\r\n:3\r\n".utf8)  // 16 bytes
        #expect(failure(array, limits: RedisReplyLimits(maxBytes: 15, maxElements: 8)) == .protocolError("a reply of more than 15 bytes"))
        let reader = HiredisReader(limits: RedisReplyLimits(maxBytes: 15, maxElements: 8))
        var error: RedisError?
        for byte in array {
            do throws(RedisError) {
                try reader.feed([byte])
                while try reader.nextReply() != nil {}
            } catch let caught {
                error = caught
                break
            }
        }
        #expect(error == .protocolError("a reply of more than 15 bytes"))
    }

    @Test("a line that never ends is refused at the byte limit, its bytes freed")
    func endlessLine() throws {
        let reader = HiredisReader(limits: RedisReplyLimits(maxBytes: 1 << 20, maxElements: 8))
        let chunk = [UInt8](repeating: UInt8(ascii: "K"), count: 16_384)
        try reader.feed(Array("+OK".utf8))
        var fed = 3
        var error: RedisError?
        while fed < 8 << 20 {
            do throws(RedisError) {
                try reader.feed(chunk)
                fed += chunk.count
                #expect(try reader.nextReply() == nil)
                #expect(reader.bufferedBytes <= 1 << 20)
            } catch let caught {
                error = caught
                break
            }
        }
        #expect(error == .protocolError("a reply of more than 1048576 bytes"))
        #expect(fed <= (1 << 20) + chunk.count)
        #expect(reader.bufferedBytes == 0)
    }

    @Test("a failed reader refuses more input and keeps its first failure")
    func failureSticks() throws {
        let reader = HiredisReader()
        try reader.feed(Array("+OK\r\n!".utf8))
        #expect(try reader.nextReply() == .status("OK"))
        let expected = RedisError.protocolError("Protocol error, got \"!\" as reply type byte")
        #expect(throws: expected) { try reader.nextReply() }
        #expect(throws: expected) { try reader.feed(Array("+OK\r\n".utf8)) }
        #expect(throws: expected) { try reader.nextReply() }
        #expect(reader.failure == expected)
        #expect(reader.bufferedBytes == 0)
    }

    @Test("a megabyte error reply is read whole, and capped to one line as a RedisError")
    func megabyteError() throws {
        let text = String(repeating: "E", count: 1 << 20) + "\r\u{1}"
        let reply = try replies("-" + text + "\r\n")
        #expect(reply == [.error(text)])
        guard case .serverError(let capped) = RedisError.serverError(replyText: text) else {
            Issue.record("not a server error")
            return
        }
        #expect(capped.utf8.count <= RedisError.maxServerErrorBytes + 3)
        #expect(capped.hasSuffix("…"))
        #expect(!capped.contains("\r"))
        #expect(RedisError.serverError(replyText: "WRONGTYPE a\r\nb") == .serverError("WRONGTYPE a  b"))
    }

    @Test("commands are formatted as RESP arrays of bulk strings, binary-safe", arguments: [
        ([Array("SET".utf8), Array("k".utf8), Array("v".utf8)], "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"),
        ([Array("PING".utf8)], "*1\r\n$4\r\nPING\r\n"),
        ([Array("SET".utf8), [], [0, 13, 10]], "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$3\r\n\0\r\n\r\n"),
    ])
    func formatting(_ arguments: [[UInt8]], _ expected: String) throws {
        let command = RedisCommand(arguments)
        #expect(command.encoded == Array(expected.utf8))
        #expect(try replies(command.encoded) == [.array(arguments.map(RedisValue.bulkString))])
    }

    @Test("a command's name is its first argument, upper-cased; other arguments never show")
    func commandNames() {
        #expect(RedisCommand("set", "key", "secret").name == "SET")
        #expect(RedisCommand("XADD", ["stream", "*"], [[0xFF]]).name == "XADD")
        #expect(RedisCommand([[0xFF, 0]]).name == "?")
        #expect(RedisCommand([Array(String(repeating: "A", count: 33).utf8)]).name == "?")
        #expect(RedisCommand("GET", "k").encoded == Array("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".utf8))
    }

    @Test("a megabyte argument formats and reads back")
    func megabyteArgument() throws {
        var generator = SeededGenerator(seed: 7)
        let value = generator.bytes(1 << 20)
        let command = RedisCommand("SET", ["k"], [value])
        #expect(try replies(command.encoded) == [.array([.bulkString("SET"), .bulkString("k"), .bulkString(value)])])
    }
}

@Suite("Redis values")
struct RedisValueTests {
    @Test("the helpers read each kind and nothing else")
    func helpers() {
        #expect(RedisValue.bulkString("é").string == "é")
        #expect(RedisValue.bulkString([0xFF]).string == nil)
        #expect(RedisValue.status("OK").string == "OK")
        #expect(RedisValue.status("OK").bytes == Array("OK".utf8))
        #expect(RedisValue.status("OK").isOK)
        #expect(!RedisValue.bulkString("OK").isOK)
        #expect(RedisValue.integer(3).integer == 3)
        #expect(RedisValue.integer(3).string == nil)
        #expect(RedisValue.array([.null]).array == [.null])
        #expect(RedisValue.null.isNull)
        #expect(RedisValue.null.bytes == nil)
        #expect(RedisValue.error("ERR x").errorText == "ERR x")
        #expect(RedisValue.error("ERR x").string == nil)
    }

    @Test("descriptions are bounded")
    func boundedDescription() {
        let big = RedisValue.array(Array(repeating: .bulkString([UInt8](repeating: 0, count: 1 << 20)), count: 1000))
        #expect(big.description.utf8.count < 8192)
        #expect(RedisValue.bulkString("a\"b").description == "\"a\\x22b\"")
        #expect(RedisValue.array([.integer(1), .null, .status("OK")]).description == "[:1, null, +OK]")
    }
}
