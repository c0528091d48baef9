// All of the relay's hiredis pointer code (ARCHITECTURE.md §3): the RESP
// reader with the relay's reply limits, the copy of its reply tree into
// RedisValue, and the command formatter. The reader has a Swift owner,
// `HiredisReader`, that frees it in deinit; a formatted command is copied
// out and freed at once.

import CHiredis
import Glibc

/// hiredis' own reply functions (they build the `redisReply` tree), read
/// once from a reader `redisReaderCreate` made: hiredis exports no name for
/// them. The relay's functions check the limits, then call these.
/// Immutable after this initialisation, so shared by every reader.
private let hiredisFunctions: redisReplyObjectFunctions = {
    guard let reader = redisReaderCreate() else { fatalError("hiredis: cannot create a reader (out of memory)") }
    defer { redisReaderFree(reader) }
    guard let functions = reader.pointee.fn else { fatalError("hiredis: a reader without reply functions") }
    return functions.pointee
}()

/// The element count of the reply being read, checked against the limit
/// by the reply functions, which reach it through the reader's
/// `privdata` (hiredis hands it to every task).
private struct ElementBudget {
    let limit: Int
    var elements = 0
    /// Set when `createArray` refused (hiredis then reports "Out of memory").
    var refused = false
}

/// hiredis' reply functions, but an array's count is checked against the
/// limit before hiredis allocates its element pointers.
private func makeReplyFunctions() -> redisReplyObjectFunctions {
    var functions = hiredisFunctions
    functions.createArray = { task, count in
        guard let task, let budget = task.pointee.privdata?.assumingMemoryBound(to: ElementBudget.self) else { return nil }
        budget.pointee.elements += Int(count)
        if budget.pointee.elements > budget.pointee.limit {
            budget.pointee.refused = true
            return nil
        }
        return hiredisFunctions.createArray?(task, count)
    }
    return functions
}

/// A RESP reader: bytes in, replies out, in order, whatever the chunking.
/// hiredis parses; this owner applies `RedisReplyLimits` (see there for
/// why) and copies each reply into a `RedisValue`. The byte limit is on a
/// reply's size on the wire (from its type byte to its last CRLF), so it
/// holds whatever the chunking: what hiredis parsed of a reply so far plus
/// what waits unparsed is checked whenever a reply is incomplete, and the
/// whole when it completes. After the first error (hiredis' protocol
/// error, or a limit) the reader is freed and every later call reports that
/// error again: a stream that was garbage once is not read further. Not
/// thread-safe (its connection's loop uses it).
public final class HiredisReader {
    private var reader: UnsafeMutablePointer<redisReader>?
    private let functions: UnsafeMutablePointer<redisReplyObjectFunctions>
    private let budget: UnsafeMutablePointer<ElementBudget>
    private let maxBytes: Int
    /// Bytes of the reply being read that hiredis has parsed already (the
    /// items of an array it has not finished).
    private var parsedBytes = 0
    public private(set) var failure: RedisError?

    public init(limits: RedisReplyLimits = .default) {
        maxBytes = limits.maxBytes
        functions = .allocate(capacity: 1)
        functions.initialize(to: makeReplyFunctions())
        budget = .allocate(capacity: 1)
        budget.initialize(to: ElementBudget(limit: limits.maxElements))
        guard let reader = redisReaderCreateWithFunctions(functions) else {
            fatalError("hiredis: cannot create a reader (out of memory)")
        }
        // hiredis' maxbuf stays: it only decides when an emptied buffer's
        // memory is given back; the limit on what waits is the byte limit.
        reader.pointee.privdata = UnsafeMutableRawPointer(budget)
        self.reader = reader
    }

    deinit {
        if let reader { redisReaderFree(reader) }
        budget.deinitialize(count: 1)
        budget.deallocate()
        functions.deinitialize(count: 1)
        functions.deallocate()
    }

    /// Bytes received and not yet parsed (0 after a failure).
    public var bufferedBytes: Int {
        guard let reader else { return 0 }
        return reader.pointee.len - reader.pointee.pos
    }

    /// Appends received bytes. Feed what one read returned, then take the
    /// replies (`nextReply` until nil) before feeding more: the limit on
    /// what waits is checked there.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(RedisError) {
        if let failure { throw failure }
        guard let reader else { preconditionFailure("HiredisReader: no reader and no failure") }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if redisReaderFeed(reader, base.assumingMemoryBound(to: CChar.self), bytes.count) != REDIS_OK {
            throw fail(nil)
        }
    }

    public func feed(_ bytes: [UInt8]) throws(RedisError) {
        let result: Result<Void, RedisError> = bytes.withUnsafeBytes { buffer in
            do throws(RedisError) {
                try feed(buffer)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// The next complete reply, or nil until more bytes arrive.
    public func nextReply() throws(RedisError) -> RedisValue? {
        if let failure { throw failure }
        guard let reader else { preconditionFailure("HiredisReader: no reader and no failure") }
        let unparsedBefore = reader.pointee.len - reader.pointee.pos
        var reply: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &reply) == REDIS_OK else { throw fail(nil) }
        // hiredis may move the buffer's unparsed part to its start (pos
        // and len change together): what is unparsed tells what it parsed.
        let unparsed = reader.pointee.len - reader.pointee.pos
        parsedBytes += unparsedBefore - unparsed
        guard let reply else {
            if parsedBytes + unparsed > maxBytes { throw fail(tooLarge) }
            return nil
        }
        defer { freeReplyObject(reply) }
        if parsedBytes > maxBytes { throw fail(tooLarge) }
        parsedBytes = 0
        budget.pointee.elements = 0
        return redisValue(reply.assumingMemoryBound(to: redisReply.self))
    }

    private var tooLarge: String { "a reply of more than \(maxBytes) bytes" }

    /// Records the failure (`reason`, else the element limit's, else
    /// hiredis' message) and frees the reader and what it buffered.
    private func fail(_ reason: String?) -> RedisError {
        let message: String
        if let reason {
            message = reason
        } else if budget.pointee.refused {
            message = "a reply of more than \(budget.pointee.limit) elements"
        } else if let reader {
            let text = withUnsafeBytes(of: reader.pointee.errstr) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            message = text.isEmpty ? "hiredis reader error \(reader.pointee.err)" : text
        } else {
            message = "reader closed"
        }
        let error = RedisError.protocolError(oneLine(message, limit: 200))
        failure = error
        if let reader { redisReaderFree(reader) }
        reader = nil
        return error
    }
}

/// A complete reply tree as values. Arrays nest at most 7 deep (hiredis'
/// reader refuses deeper ones), so the recursion is shallow.
private func redisValue(_ reply: UnsafePointer<redisReply>) -> RedisValue {
    let node = reply.pointee
    switch node.type {
    case REDIS_REPLY_STRING:
        guard let text = node.str, node.len > 0 else { return .bulkString([]) }
        return .bulkString(Array(UnsafeRawBufferPointer(start: text, count: node.len)))
    case REDIS_REPLY_STATUS:
        return .status(text(node))
    case REDIS_REPLY_ERROR:
        return .error(text(node))
    case REDIS_REPLY_INTEGER:
        return .integer(Int64(node.integer))
    case REDIS_REPLY_NIL:
        return .null
    case REDIS_REPLY_ARRAY:
        guard node.elements > 0, let elements = node.element else { return .array([]) }
        var values: [RedisValue] = []
        values.reserveCapacity(node.elements)
        for index in 0..<node.elements {
            guard let element = elements[index] else { preconditionFailure("hiredis: a complete reply with a missing element") }
            values.append(redisValue(element))
        }
        return .array(values)
    default:
        preconditionFailure("hiredis: reply type \(node.type) is none of RESP2's")
    }
}

private func text(_ node: redisReply) -> String {
    guard let text = node.str else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: text, count: node.len), as: UTF8.self)
}

/// `arguments` as a RESP command (an array of bulk strings), binary-safe,
/// as hiredis' `redisFormatCommandArgv` writes it.
func hiredisFormatCommand(_ arguments: [[UInt8]]) -> [UInt8] {
    precondition(!arguments.isEmpty, "a Redis command needs a name")
    precondition(arguments.count < Int(Int32.max), "a Redis command of \(arguments.count) arguments")
    // One buffer holds every argument, so their pointers are valid at once.
    var joined: [UInt8] = []
    joined.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
    var offsets: [Int] = []
    var lengths: [Int] = []
    offsets.reserveCapacity(arguments.count)
    lengths.reserveCapacity(arguments.count)
    for argument in arguments {
        offsets.append(joined.count)
        lengths.append(argument.count)
        joined += argument
    }
    // redisFormatCommandArgv returns an int: keep well below 2 GiB (Redis
    // refuses bulk strings over 512 MB anyway, proto-max-bulk-len).
    precondition(joined.count < 1 << 30, "a Redis command of \(joined.count) bytes")
    joined.append(0)  // never empty, so the base address exists
    return joined.withUnsafeBufferPointer { buffer -> [UInt8] in
        let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
        var pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
        var target: UnsafeMutablePointer<CChar>?
        let length = pointers.withUnsafeMutableBufferPointer { argv in
            lengths.withUnsafeBufferPointer { argvlen in
                redisFormatCommandArgv(&target, Int32(arguments.count), argv.baseAddress, argvlen.baseAddress)
            }
        }
        guard length >= 0, let target else { fatalError("hiredis: cannot format a command (out of memory)") }
        defer { redisFreeCommand(target) }
        return Array(UnsafeRawBufferPointer(start: target, count: Int(length)))
    }
}
