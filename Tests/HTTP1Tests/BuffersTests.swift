import EventLoop
import Glibc
import HTTP1
import TestSupport
import Testing

@Suite("Buffers")
struct BuffersTests {
    @Test("the output queue sends many chunks in order through a full socket")
    func outputQueueThroughFullSocket() throws {
        let (writer, reader) = try makeSocketPair()
        try writer.setSendBufferSize(4096)
        var queue = OutputQueue()
        var expected: [UInt8] = []
        // 300 chunks (more than one sendmsg's worth of vectors), sizes 1…~2 KiB.
        for index in 0..<300 {
            let chunk = patternBytes(count: 1 + (index * 37) % 2048, seed: UInt64(index + 1))
            queue.append(chunk)
            expected += chunk
        }
        queue.append([])  // ignored
        #expect(queue.count == expected.count)
        var received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 8192)
        var sawWouldBlock = false
        for _ in 0..<100_000 where received.count < expected.count {
            switch queue.write(to: writer) {
            case .flushed: #expect(queue.isEmpty)
            case .wouldBlock: sawWouldBlock = true
            case .failed(let code): Issue.record("write failed: \(code)"); return
            }
            #expect(queue.count == expected.count - received.count - pendingInSocket(reader, scratch: &scratch, into: &received))
        }
        #expect(received == expected)
        #expect(sawWouldBlock)
        #expect(queue.isEmpty)
    }

    /// Reads what `reader` has; returns bytes that were in flight (read now).
    private func pendingInSocket(_ reader: Socket, scratch: inout [UInt8], into received: inout [UInt8]) -> Int {
        var total = 0
        while case .bytes(let count) = scratch.withUnsafeMutableBytes({ reader.read(into: $0) }) {
            received += scratch[0..<count]
            total += count
        }
        return total
    }

    @Test("the output queue reports a failed peer and can be cleared")
    func outputQueueFailure() throws {
        let (writer, reader) = try makeSocketPair()
        reader.close()
        var queue = OutputQueue()
        queue.append([1, 2, 3])
        #expect(queue.write(to: writer) == .failed(EPIPE) || queue.write(to: writer) == .failed(ECONNRESET))
        #expect(queue.count == 3)
        queue.removeAll()
        #expect(queue.isEmpty)
        #expect(queue.write(to: writer) == .flushed)
    }

    @Test("the input buffer grows to its limit, reports full, compacts after consume")
    func inputBufferLimits() throws {
        let (writer, reader) = try makeSocketPair()
        let data = patternBytes(count: 10_000, seed: 3)
        _ = data.withUnsafeBytes { writer.write($0) }
        var buffer = InputBuffer(initialCapacity: 16, limit: 1000)
        var reads = 0
        while case .bytes = buffer.read(from: reader) { reads += 1 }
        #expect(buffer.readableCount == 1000)
        #expect(buffer.isFull)
        #expect(buffer.read(from: reader) == .full)
        #expect(reads > 1)  // grew in steps
        buffer.withReadableBytes { #expect(Array($0) == Array(data[0..<1000])) }
        buffer.consume(600)
        #expect(buffer.readableCount == 400)
        #expect(buffer.read(from: reader) == .bytes(600))  // compacted, not grown past the limit
        buffer.withReadableBytes { #expect(Array($0) == Array(data[600..<1600])) }
        buffer.consume(5000)  // clamped
        #expect(buffer.isEmpty)
        writer.close()
        var sawEnd = false
        for _ in 0..<1000 {
            let result = buffer.read(from: reader)
            if result == .endOfFile { sawEnd = true; break }
            buffer.consume(buffer.readableCount)
        }
        #expect(sawEnd)
    }

    @Test("append respects the limit and keeps order across compaction")
    func inputBufferAppend() {
        var buffer = InputBuffer(initialCapacity: 4, limit: 10)
        #expect(([1, 2, 3, 4, 5, 6] as [UInt8]).withUnsafeBytes { buffer.append($0) })
        #expect(!([7, 8, 9, 10, 11] as [UInt8]).withUnsafeBytes { buffer.append($0) })
        buffer.consume(4)
        #expect(([7, 8, 9, 10, 11, 12, 13, 14] as [UInt8]).withUnsafeBytes { buffer.append($0) })
        buffer.withReadableBytes { #expect(Array($0) == [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]) }
        #expect(buffer.isFull)
        #expect(buffer.fill { _ in .bytes(1) } == .full)
    }

    @Test("a short read says the socket is drained; a read that fills the space says it may hold more")
    func lastReadFilledSpace() throws {
        let (writer, reader) = try makeSocketPair()
        var buffer = InputBuffer(initialCapacity: 16, limit: 64)
        let sixteen = [UInt8](repeating: 1, count: 16)
        _ = sixteen.withUnsafeBytes { writer.write($0) }
        #expect(buffer.read(from: reader) == .bytes(16))
        #expect(buffer.lastReadFilledSpace)
        let ten = [UInt8](repeating: 2, count: 10)
        _ = ten.withUnsafeBytes { writer.write($0) }
        // The buffer grows to 32: 10 of 16 free bytes come.
        #expect(buffer.read(from: reader) == .bytes(10))
        #expect(!buffer.lastReadFilledSpace)
        #expect(buffer.read(from: reader) == .wouldBlock)
    }
}
