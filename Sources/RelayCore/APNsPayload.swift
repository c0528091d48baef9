// The APNs payload the iOS clients of toot-relay decode, key by key
// (ARCHITECTURE.md §2):
// {"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":"<z85 body>"
//  [,"k":"<z85 dh>","s":"<z85 salt>"][,"x":"<extra>"]}
// z85 digits need no JSON escaping (the alphabet has neither `"` nor `\`).
private let payloadPrefix = Array(#"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":""#.utf8)
private let keyPart = Array(#"","k":""#.utf8)
private let saltPart = Array(#"","s":""#.utf8)
private let extraPart = Array(#"","x":""#.utf8)
private let payloadSuffix = Array(#""}"#.utf8)

/// The payload's parts in order, handed to `sink`: the one enumeration
/// behind its size, its in-place writing and the appending fallback.
@inline(__always)
private func emitAPNsPayload(for message: WebPushMessage, extra: String?, to sink: inout some PayloadSink) {
    sink.write(payloadPrefix)
    sink.writeZ85(message.body)
    if case .aesgcm(let dh, let salt) = message.encoding {
        sink.write(keyPart)
        sink.writeZ85(dh)
        sink.write(saltPart)
        sink.writeZ85(salt)
    }
    if let extra {
        sink.write(extraPart)
        sink.writeJSONEscaped(extra)
    }
    sink.write(payloadSuffix)
}

/// Exact size in bytes of the APNs payload for `message` with `extra`.
public func apnsPayloadSize(for message: WebPushMessage, extra: String?) -> Int {
    var counter = PayloadSizeCounter()
    emitAPNsPayload(for: message, extra: extra, to: &counter)
    return counter.count
}

/// The APNs payload bytes.
public func makeAPNsPayload(for message: WebPushMessage, extra: String?) -> [UInt8] {
    makeAPNsPayload(for: message, extra: extra, capacity: apnsPayloadSize(for: message, extra: extra))
}

/// Writes the payload in place into storage of exactly `size` bytes (no
/// zero-fill, no growth); falls back to appending should `size` not match
/// what is written (it always does: both follow `emitAPNsPayload`).
func makeAPNsPayload(for message: WebPushMessage, extra: String?, capacity size: Int) -> [UInt8] {
    var complete = false
    let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, initializedCount in
        var writer = PayloadWriter(buffer)
        emitAPNsPayload(for: message, extra: extra, to: &writer)
        complete = !writer.overflowed && writer.count == size
        initializedCount = complete ? writer.count : 0
    }
    return complete ? payload : appendAPNsPayload(for: message, extra: extra, capacity: size)
}

/// The payload built by appending to an array: the fallback of
/// `makeAPNsPayload`, through the array encoders (`Z85.encode(_:into:)`).
func appendAPNsPayload(for message: WebPushMessage, extra: String?, capacity: Int) -> [UInt8] {
    var payload: [UInt8] = []
    payload.reserveCapacity(capacity)
    emitAPNsPayload(for: message, extra: extra, to: &payload)
    return payload
}

/// Where `emitAPNsPayload` puts the payload's parts.
private protocol PayloadSink {
    mutating func write(_ bytes: [UInt8])
    mutating func writeZ85(_ bytes: [UInt8])
    mutating func writeJSONEscaped(_ text: String)
}

/// Counts the bytes instead of writing them.
private struct PayloadSizeCounter: PayloadSink {
    var count = 0
    mutating func write(_ bytes: [UInt8]) { count += bytes.count }
    mutating func writeZ85(_ bytes: [UInt8]) { count += Z85.encodedCount(bytes.count) }
    mutating func writeJSONEscaped(_ text: String) { count += jsonEscapedCount(text) }
}

extension Array: PayloadSink where Element == UInt8 {
    fileprivate mutating func write(_ bytes: [UInt8]) { append(contentsOf: bytes) }
    fileprivate mutating func writeZ85(_ bytes: [UInt8]) { Z85.encode(bytes, into: &self) }
    fileprivate mutating func writeJSONEscaped(_ text: String) { appendJSONStringContent(text, to: &self) }
}

/// Writes into a fixed buffer; never past its end (it notes the overflow).
private struct PayloadWriter: PayloadSink {
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
        forEachJSONEscapedByte(text) { write($0) }
    }

    mutating func writeZ85(_ bytes: [UInt8]) {
        guard let target = reserve(Z85.encodedCount(bytes.count)) else { return }
        bytes.withUnsafeBytes { Z85.encode($0, to: UnsafeMutableRawPointer(target)) }
    }
}
