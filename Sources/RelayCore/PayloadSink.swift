// Writing an APNs payload (WIRE.md §2) in place: each dialect lists
// its parts once, in a function generic over its sink; the same list is
// counted for the exact size, written into storage of that size, or
// appended as a fallback. The parts are passed as borrowed arguments, never
// stored: a struct holding the message would retain its arrays on every
// request.

import Base64URL
import JSON

/// The payload written in place into storage of exactly `size` bytes (no
/// zero-fill, no growth) by `write`; should that not fill it exactly (it
/// always does when both closures list the same parts as the size was
/// counted from), the payload built by `append` instead.
@inline(__always)
func payloadBytes(size: Int, write: (inout PayloadWriter) -> Void, append: (inout [UInt8]) -> Void) -> [UInt8] {
    var complete = false
    let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, initializedCount in
        var writer = PayloadWriter(buffer)
        write(&writer)
        complete = !writer.overflowed && writer.count == size
        initializedCount = complete ? writer.count : 0
    }
    if complete { return payload }
    var appended: [UInt8] = []
    appended.reserveCapacity(size)
    append(&appended)
    return appended
}

/// What of a Web Push message an APNs payload carries.
public enum PayloadContent: Sendable, Equatable {
    /// The ciphertext and every key of the dialect.
    case whole
    /// Every key but the ciphertext (`p`, metatext's `m`): for a body of at
    /// most 4096 bytes (RFC 8030 §7.2 has a push service take that much)
    /// that does not fit APNs' 4096-byte payload once encoded (z85 grows it
    /// by a quarter, base64url by a third). The phone still shows the
    /// app's alert, that something arrived.
    case withoutCiphertext
}

/// Where a payload's parts go.
protocol PayloadSink {
    mutating func write(_ bytes: [UInt8])
    mutating func writeZ85(_ bytes: [UInt8])
    /// Base64url (RFC 4648 §5); metatext-apns' `m` is padded.
    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool)
    mutating func writeJSONEscaped(_ text: String)
    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>)
    /// `text`'s UTF-8 as it is, for text whose syntax admits nothing JSON
    /// escapes (an FCM token, a decimal): one copy instead of a check and a
    /// write per byte.
    mutating func writeVerbatim(_ text: String)
}

extension PayloadSink {
    /// `{"aps":{"alert":<alert>` then `rest`: the app's own alert, or the
    /// dialect's default whose bytes `defaultStart` already holds whole (one
    /// copy instead of three on every request).
    @inline(__always)
    mutating func writeAPSStart(alert: APNsAlert?, defaultStart: [UInt8], rest: [UInt8]) {
        guard let alert else { return write(defaultStart) }
        write(apsAlertStart)
        write(alert.json)
        write(rest)
    }
}

private let apsAlertStart = Array(#"{"aps":{"alert":"#.utf8)

/// `{"aps":{"alert":<alert>` + `rest`, as one array.
func apsStart(alert: APNsAlert, rest: String) -> [UInt8] {
    apsAlertStart + alert.json + Array(rest.utf8)
}

/// Counts the bytes instead of writing them.
struct PayloadSizeCounter: PayloadSink {
    var count = 0
    mutating func write(_ bytes: [UInt8]) { count += bytes.count }
    mutating func writeZ85(_ bytes: [UInt8]) { count += Z85.encodedCount(bytes.count) }
    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool) { count += base64Count(bytes.count, padded: padded) }
    mutating func writeJSONEscaped(_ text: String) { count += jsonEscapedCount(text.utf8) }
    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>) { count += jsonEscapedCount(bytes) }
    mutating func writeVerbatim(_ text: String) { count += text.utf8.count }
}

extension Array: PayloadSink where Element == UInt8 {
    mutating func write(_ bytes: [UInt8]) { append(contentsOf: bytes) }
    mutating func writeZ85(_ bytes: [UInt8]) { Z85.encode(bytes, into: &self) }
    mutating func writeBase64URL(_ bytes: [UInt8], padded: Bool) {
        forEachBase64URLDigit(of: bytes, padded: padded) { append($0) }
    }
    mutating func writeJSONEscaped(_ text: String) { appendJSONStringContent(text, to: &self) }
    mutating func writeJSONEscaped(_ bytes: ArraySlice<UInt8>) { forEachJSONEscapedByte(bytes) { append($0) } }
    mutating func writeVerbatim(_ text: String) { append(contentsOf: text.utf8) }
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

    mutating func writeVerbatim(_ text: String) {
        var text = text
        text.withUTF8 { source in
            guard let start = source.baseAddress, let target = reserve(source.count) else { return }
            target.initialize(from: start, count: source.count)
        }
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
