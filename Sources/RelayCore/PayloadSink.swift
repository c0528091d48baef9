// Writing an APNs payload (ARCHITECTURE.md §2) in place: each dialect lists
// its parts once (`APNsPayloadParts`), and the same list is counted for the
// exact size, written into storage of that size, or appended as a fallback.

/// A payload's parts in order, handed to a sink: the one enumeration
/// behind a payload's size, its in-place writing and the appending fallback.
protocol APNsPayloadParts {
    func emit(to sink: inout some PayloadSink)
}

extension APNsPayloadParts {
    /// Exact size in bytes of the payload.
    var size: Int {
        var counter = PayloadSizeCounter()
        emit(to: &counter)
        return counter.count
    }

    /// Writes the payload in place into storage of exactly `size` bytes (no
    /// zero-fill, no growth); falls back to appending should `size` not
    /// match what is written (it always does: both follow `emit`).
    func bytes(capacity size: Int) -> [UInt8] {
        var complete = false
        let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, initializedCount in
            var writer = PayloadWriter(buffer)
            emit(to: &writer)
            complete = !writer.overflowed && writer.count == size
            initializedCount = complete ? writer.count : 0
        }
        return complete ? payload : appendedBytes(capacity: size)
    }

    /// The payload built by appending to an array: the fallback of
    /// `bytes(capacity:)`, through the array encoders.
    func appendedBytes(capacity: Int) -> [UInt8] {
        var payload: [UInt8] = []
        payload.reserveCapacity(capacity)
        emit(to: &payload)
        return payload
    }
}

/// Where a payload's parts go.
protocol PayloadSink {
    mutating func write(_ bytes: [UInt8])
    mutating func writeZ85(_ bytes: [UInt8])
    /// Base64url (RFC 4648 §5); metatext-apns' `m` is padded.
    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool)
    mutating func writeJSONEscaped(_ text: String)
    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>)
}

/// Counts the bytes instead of writing them.
struct PayloadSizeCounter: PayloadSink {
    var count = 0
    mutating func write(_ bytes: [UInt8]) { count += bytes.count }
    mutating func writeZ85(_ bytes: [UInt8]) { count += Z85.encodedCount(bytes.count) }
    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool) { count += base64Count(bytes.count, padded: padded) }
    mutating func writeJSONEscaped(_ text: String) { count += jsonEscapedCount(text.utf8) }
    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>) { count += jsonEscapedCount(bytes) }
}

extension Array: PayloadSink where Element == UInt8 {
    mutating func write(_ bytes: [UInt8]) { append(contentsOf: bytes) }
    mutating func writeZ85(_ bytes: [UInt8]) { Z85.encode(bytes, into: &self) }
    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool) {
        forEachBase64URLDigit(of: bytes, padded: padded) { append($0) }
    }
    mutating func writeJSONEscaped(_ text: String) { appendJSONStringContent(text, to: &self) }
    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>) { forEachJSONEscapedByte(bytes) { append($0) } }
}

/// Writes into a fixed buffer; never past its end (it notes the overflow).
struct PayloadWriter: PayloadSink {
    let base: UnsafeMutablePointer<UInt8>?
    let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress
        capacity = buffer.count
    }

    private mutating func reserve(_ byteCount: Int) -> UnsafeMutablePointer<UInt8>? {
        guard !overflowed, let base, capacity - count >= byteCount else {
            overflowed = true
            return nil
        }
        defer { count += byteCount }
        return base + count
    }

    mutating func write(_ byte: UInt8) {
        reserve(1)?.initialize(to: byte)
    }

    mutating func write(_ bytes: [UInt8]) {
        guard let target = reserve(bytes.count) else { return }
        bytes.withUnsafeBufferPointer { source in
            if let start = source.baseAddress { target.initialize(from: start, count: source.count) }
        }
    }

    mutating func writeJSONEscaped(_ text: String) {
        forEachJSONEscapedByte(text.utf8) { write($0) }
    }

    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>) {
        forEachJSONEscapedByte(bytes) { write($0) }
    }

    mutating func writeZ85(_ bytes: [UInt8]) {
        guard let target = reserve(Z85.encodedCount(bytes.count)) else { return }
        bytes.withUnsafeBytes { Z85.encode($0, to: UnsafeMutableRawPointer(target)) }
    }

    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool) {
        guard let target = reserve(base64Count(bytes.count, padded: padded)) else { return }
        var next = target
        forEachBase64URLDigit(of: bytes, padded: padded) { digit in
            next.initialize(to: digit)
            next += 1
        }
    }
}
