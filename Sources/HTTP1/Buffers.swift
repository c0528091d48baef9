import EventLoop
import Glibc

/// Outgoing bytes of one connection: whole `[UInt8]` chunks, sent with one
/// `sendmsg` over many of them. `count` is the back-pressure signal: stop
/// reading from the peer while it is above your high-water mark.
public struct OutputQueue {
    /// Chunks not yet fully sent start at `head`; `headOffset` bytes of
    /// `chunks[head]` are already out.
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var headOffset = 0
    /// Bytes queued and not yet written.
    public private(set) var count = 0

    /// Buffers per `sendmsg`: enough to drain many small responses at once.
    private static let vectorsPerWrite = 64

    public init() {}

    public var isEmpty: Bool { count == 0 }

    public mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        count += bytes.count
    }

    public mutating func removeAll() {
        chunks.removeAll()
        head = 0
        headOffset = 0
        count = 0
    }

    public enum FlushResult: Equatable, Sendable {
        /// Everything queued is written.
        case flushed
        /// The socket is full; wait for `.writable`. `count` bytes remain.
        case wouldBlock
        case failed(Int32)
    }

    /// Writes as much as the socket takes.
    public mutating func write(to socket: Socket) -> FlushResult {
        while count > 0 {
            let (result, attempted) = OutputQueue.send(chunks, from: head, offset: headOffset, to: socket)
            switch result {
            case .bytes(let written):
                advance(by: written)
                // A short write means the socket buffer filled up: asking
                // again would only return EAGAIN.
                if written < attempted { return .wouldBlock }
            case .wouldBlock:
                return .wouldBlock
            case .failed(let code):
                return .failed(code)
            }
        }
        return .flushed
    }

    /// Gathers up to `vectorsPerWrite` chunks into iovecs and sends them. The
    /// pointers only live inside the nested `withUnsafeBytes` calls, hence the
    /// recursion (one level per chunk).
    private static func send(_ chunks: [[UInt8]], from first: Int, offset: Int,
                             to socket: Socket) -> (WriteResult, attempted: Int) {
        let last = min(chunks.count, first + vectorsPerWrite)
        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: last - first) { vectors in
            func gather(_ index: Int, _ attempted: Int) -> (WriteResult, attempted: Int) {
                if index == last {
                    return (socket.write(vectors: UnsafeMutableBufferPointer(rebasing: vectors[0..<(last - first)])), attempted)
                }
                return chunks[index].withUnsafeBytes { bytes in
                    let skip = index == first ? offset : 0
                    vectors[index - first] = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress! + skip),
                                                   iov_len: bytes.count - skip)
                    return gather(index + 1, attempted + bytes.count - skip)
                }
            }
            return gather(first, 0)
        }
    }

    private mutating func advance(by written: Int) {
        count -= written
        var remaining = written
        while remaining > 0 {
            let available = chunks[head].count - headOffset
            if remaining >= available {
                remaining -= available
                chunks[head] = []  // release the memory now, not at compaction
                head += 1
                headOffset = 0
            } else {
                headOffset += remaining
                remaining = 0
            }
        }
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}

/// Incoming bytes of one connection: a contiguous buffer that grows up to
/// `limit` readable bytes and compacts (moves unread bytes to the front)
/// before growing. Parsers look at `withReadableBytes` and `consume` what
/// they used.
public struct InputBuffer {
    private var storage: [UInt8]
    private var readerIndex = 0
    private var writerIndex = 0
    /// The most unread bytes it will hold; reads stop at `.full`.
    public let limit: Int

    public init(initialCapacity: Int = 4096, limit: Int) {
        self.limit = max(limit, 1)
        storage = [UInt8](repeating: 0, count: min(max(initialCapacity, 1), self.limit))
    }

    public var readableCount: Int { writerIndex - readerIndex }
    public var isEmpty: Bool { readerIndex == writerIndex }
    public var isFull: Bool { readableCount >= limit }
    /// The last read filled every byte of space it was offered: the socket
    /// may hold more. After a shorter read a stream socket is drained, and
    /// the next read would only say EAGAIN (an extra syscall per request).
    public var lastReadFilledSpace: Bool { writerIndex == storage.count }

    public func withReadableBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[readerIndex..<writerIndex])) }
    }

    /// Marks `count` unread bytes as used (clamped to what is there).
    public mutating func consume(_ count: Int) {
        readerIndex += min(max(count, 0), readableCount)
        if readerIndex == writerIndex {
            readerIndex = 0
            writerIndex = 0
        }
    }

    public enum FillResult: Equatable, Sendable {
        case bytes(Int)
        case wouldBlock
        case endOfFile
        case failed(Int32)
        /// `limit` unread bytes are held: consume some first.
        case full
    }

    /// Reads once from `socket` into the free space.
    public mutating func read(from socket: Socket) -> FillResult {
        fill { socket.read(into: $0) }
    }

    /// Lets `reader` (a socket read, a TLS read) write into the free space
    /// and keeps the bytes it reports.
    public mutating func fill(_ reader: (UnsafeMutableRawBufferPointer) -> ReadResult) -> FillResult {
        guard makeSpace() else { return .full }
        let start = writerIndex
        let result = storage.withUnsafeMutableBytes { reader(UnsafeMutableRawBufferPointer(rebasing: $0[start...])) }
        switch result {
        case .bytes(let count):
            writerIndex += min(count, storage.count - start)
            return .bytes(count)
        case .wouldBlock: return .wouldBlock
        case .endOfFile: return .endOfFile
        case .failed(let code): return .failed(code)
        }
    }

    /// Copies `bytes` in; false (and nothing copied) when they would exceed `limit`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard readableCount + bytes.count <= limit else { return false }
        // Cannot fail: compacting and growing to `limit` frees enough.
        guard makeSpace(atLeast: bytes.count) else { return false }
        let start = writerIndex
        storage.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[start...]).copyMemory(from: bytes) }
        writerIndex += bytes.count
        return true
    }

    /// Ensures free space after `writerIndex`: compact first, then grow
    /// (doubling, capped at `limit`). False when `limit` bytes are unread.
    private mutating func makeSpace(atLeast wanted: Int = 1) -> Bool {
        if storage.count - writerIndex >= wanted { return true }
        if readerIndex > 0 {
            let unread = readableCount
            let from = readerIndex
            storage.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                memmove(base, base + from, unread)
            }
            readerIndex = 0
            writerIndex = unread
            if storage.count - writerIndex >= wanted { return true }
        }
        guard storage.count < limit else { return storage.count - writerIndex >= wanted }
        let newCapacity = min(limit, max(storage.count * 2, writerIndex + wanted))
        storage.append(contentsOf: repeatElement(0, count: newCapacity - storage.count))
        return storage.count - writerIndex >= wanted
    }
}
