// What goes to APNs (DESIGN §2): path, headers and the JSON payload the iOS
// clients of toot-relay decode.

/// APNs refuses larger payloads for regular (non-VoIP) notifications.
public let apnsMaxPayloadBytes = 4096

/// One request for APNs, ready for an HTTP/2 stream.
public struct APNsNotification: Sendable, Equatable {
    public var environment: APNsEnvironment
    public var deviceToken: String
    /// `/3/device/<token>`.
    public var path: String
    /// In order: apns-push-type, apns-topic, apns-priority, apns-expiration,
    /// apns-collapse-id (only with a Topic), apns-id. Names are lowercase, as
    /// HTTP/2 requires (RFC 9113 §8.2.1).
    public var headers: [HTTPField]
    public var payload: [UInt8]
    public var apnsID: String
    /// The TTL used (capped), for the relay's `TTL` response header.
    public var ttl: Int
}

/// Builds the APNs request for a validated message.
///
/// - Parameters:
///   - topic: `apns-topic`, the app's bundle id.
///   - apnsID: a UUID string (see `makeAPNsID`).
///   - now: current unix time in seconds; `apns-expiration` is now + TTL, or
///     `0` for TTL 0 (deliver once, do not store).
/// - Throws: 413 when the payload, `x` included, exceeds 4096 bytes.
public func makeNotification(target: RelayTarget, message: WebPushMessage, topic: String, apnsID: String,
                             now: Int) throws(WebPushError) -> APNsNotification {
    let size = apnsPayloadSize(for: message, extra: target.extra)
    if size > apnsMaxPayloadBytes {
        throw WebPushError(status: 413, reason: "APNs payload would be \(size) bytes (max 4096)")
    }
    let payload = makeAPNsPayload(for: message, extra: target.extra, capacity: size)

    let (expiresAt, overflowed) = now.addingReportingOverflow(message.ttl)
    let expiration = message.ttl == 0 ? 0 : overflowed ? Int.max : expiresAt
    // Reserved at its final size: one allocation, no growth.
    var headers: [HTTPField] = []
    headers.reserveCapacity(message.topic == nil ? 5 : 6)
    headers.append(HTTPField(name: "apns-push-type", value: "alert"))
    headers.append(HTTPField(name: "apns-topic", value: topic))
    headers.append(HTTPField(name: "apns-priority", value: decimalText(message.urgency.apnsPriority)))
    headers.append(HTTPField(name: "apns-expiration", value: decimalText(expiration)))
    if let collapseID = message.topic { headers.append(HTTPField(name: "apns-collapse-id", value: collapseID)) }
    headers.append(HTTPField(name: "apns-id", value: apnsID))

    return APNsNotification(
        environment: target.environment, deviceToken: target.deviceToken, path: "/3/device/" + target.deviceToken,
        headers: headers, payload: payload, apnsID: apnsID, ttl: message.ttl)
}

// The payload, key by key (DESIGN §2):
// {"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":"<z85 body>"
//  [,"k":"<z85 dh>","s":"<z85 salt>"][,"x":"<extra>"]}
// z85 digits need no JSON escaping (the alphabet has neither `"` nor `\`).
private let payloadPrefix = Array(#"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":""#.utf8)
private let keyPart = Array(#"","k":""#.utf8)
private let saltPart = Array(#"","s":""#.utf8)
private let extraPart = Array(#"","x":""#.utf8)
private let payloadSuffix = Array(#""}"#.utf8)

/// Exact size in bytes of the APNs payload for `message` with `extra`.
public func apnsPayloadSize(for message: WebPushMessage, extra: String?) -> Int {
    var size = payloadPrefix.count + Z85.encodedCount(message.body.count) + payloadSuffix.count
    if case .aesgcm(let dh, let salt) = message.encoding {
        size += keyPart.count + Z85.encodedCount(dh.count) + saltPart.count + Z85.encodedCount(salt.count)
    }
    if let extra {
        size += extraPart.count + jsonEscapedCount(extra)
    }
    return size
}

/// The APNs payload bytes.
public func makeAPNsPayload(for message: WebPushMessage, extra: String?) -> [UInt8] {
    makeAPNsPayload(for: message, extra: extra, capacity: apnsPayloadSize(for: message, extra: extra))
}

/// Writes the payload in place into storage of exactly `size` bytes (no
/// zero-fill, no growth); falls back to appending should `size` not match
/// what is written (it always does: both follow the same enumerations).
private func makeAPNsPayload(for message: WebPushMessage, extra: String?, capacity size: Int) -> [UInt8] {
    var complete = false
    let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, initializedCount in
        var writer = PayloadWriter(buffer)
        writer.write(payloadPrefix)
        writer.writeZ85(message.body)
        if case .aesgcm(let dh, let salt) = message.encoding {
            writer.write(keyPart)
            writer.writeZ85(dh)
            writer.write(saltPart)
            writer.writeZ85(salt)
        }
        if let extra {
            writer.write(extraPart)
            forEachJSONEscapedByte(extra) { writer.write($0) }
        }
        writer.write(payloadSuffix)
        complete = !writer.overflowed && writer.count == size
        initializedCount = complete ? writer.count : 0
    }
    return complete ? payload : appendAPNsPayload(for: message, extra: extra, capacity: size)
}

/// The payload built by appending: the reference for `makeAPNsPayload`.
func appendAPNsPayload(for message: WebPushMessage, extra: String?, capacity: Int) -> [UInt8] {
    var payload: [UInt8] = []
    payload.reserveCapacity(capacity)
    payload.append(contentsOf: payloadPrefix)
    Z85.encode(message.body, into: &payload)
    if case .aesgcm(let dh, let salt) = message.encoding {
        payload.append(contentsOf: keyPart)
        Z85.encode(dh, into: &payload)
        payload.append(contentsOf: saltPart)
        Z85.encode(salt, into: &payload)
    }
    if let extra {
        payload.append(contentsOf: extraPart)
        appendJSONStringContent(extra, to: &payload)
    }
    payload.append(contentsOf: payloadSuffix)
    return payload
}

/// Writes into a fixed buffer; never past its end (it notes the overflow).
private struct PayloadWriter {
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

    mutating func writeZ85(_ bytes: [UInt8]) {
        guard let target = reserve(Z85.encodedCount(bytes.count)) else { return }
        bytes.withUnsafeBytes { Z85.encode($0, to: UnsafeMutableRawPointer(target)) }
    }
}

/// Appends `text` escaped for the inside of a JSON string (RFC 8259 §7):
/// `"` and `\` escaped, control characters as short forms or \u00XX,
/// everything else (non-ASCII UTF-8, `/`, `<`, `>`, `&`) passed through.
func appendJSONStringContent(_ text: String, to output: inout [UInt8]) {
    forEachJSONEscapedByte(text) { output.append($0) }
}

/// Bytes `appendJSONStringContent` writes for `text`.
func jsonEscapedCount(_ text: String) -> Int {
    var count = 0
    forEachJSONEscapedByte(text) { _ in count += 1 }
    return count
}

/// The one definition of the escaping: hands each output byte to `emit`.
@inline(__always)
private func forEachJSONEscapedByte(_ text: String, _ emit: (UInt8) -> Void) {
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            emit(UInt8(ascii: "\\"))
            emit(byte)
        case 0x08:
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "b"))
        case 0x0C:
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "f"))
        case UInt8(ascii: "\n"):
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"):
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"):
            emit(UInt8(ascii: "\\"))
            emit(UInt8(ascii: "t"))
        case 0..<0x20:
            for escaped in #"\u00"#.utf8 { emit(escaped) }
            emit(lowercaseHexDigit(byte >> 4))
            emit(lowercaseHexDigit(byte & 0x0F))
        default:
            emit(byte)
        }
    }
}

@inline(__always)
private func lowercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
}

/// A random (version 4, RFC 9562 §5.4) UUID in canonical 8-4-4-4-12 form,
/// uppercase as APNs writes its own ids.
///
/// Byte i of the UUID is byte i (least significant first) of the first
/// random word for i < 8, of the second for i ≥ 8. Written straight into the
/// String's storage: one allocation.
public func makeAPNsID(random: inout some RandomNumberGenerator) -> String {
    let words = (random.next() as UInt64, random.next() as UInt64)
    return String(unsafeUninitializedCapacity: 36) { text in
        var written = 0
        for index in 0..<16 {
            let word = index < 8 ? words.0 : words.1
            var byte = UInt8(truncatingIfNeeded: word >> UInt64(8 * (index % 8)))
            if index == 6 { byte = byte & 0x0F | 0x40 }  // version 4
            if index == 8 { byte = byte & 0x3F | 0x80 }  // variant 10xx
            if index == 4 || index == 6 || index == 8 || index == 10 {
                text[written] = UInt8(ascii: "-")
                written += 1
            }
            text[written] = uppercaseHexDigit(byte >> 4)
            text[written + 1] = uppercaseHexDigit(byte & 0x0F)
            written += 2
        }
        return written
    }
}

@inline(__always)
private func uppercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
}

/// The decimal digits of `value`, as a String. Up to 15 characters (every
/// TTL, expiration, priority and status) it is a small string: no
/// allocation, unlike going through a [UInt8].
func decimalText(_ value: Int) -> String {
    withDecimalDigits(value) { String(decoding: $0, as: UTF8.self) }
}
