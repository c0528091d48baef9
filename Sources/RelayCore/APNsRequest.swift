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

    var expiration: [UInt8] = []
    let (expiresAt, overflowed) = now.addingReportingOverflow(message.ttl)
    appendDecimal(message.ttl == 0 ? 0 : overflowed ? Int.max : expiresAt, to: &expiration)
    var priority: [UInt8] = []
    appendDecimal(message.urgency.apnsPriority, to: &priority)
    var headers: [HTTPField] = [
        HTTPField(name: "apns-push-type", value: "alert"),
        HTTPField(name: "apns-topic", value: topic),
        HTTPField(name: "apns-priority", value: String(decoding: priority, as: UTF8.self)),
        HTTPField(name: "apns-expiration", value: String(decoding: expiration, as: UTF8.self)),
    ]
    headers.reserveCapacity(6)
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

private func makeAPNsPayload(for message: WebPushMessage, extra: String?, capacity: Int) -> [UInt8] {
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

/// Appends `text` escaped for the inside of a JSON string (RFC 8259 §7):
/// `"` and `\` escaped, control characters as short forms or \u00XX,
/// everything else (non-ASCII UTF-8, `/`, `<`, `>`, `&`) passed through.
func appendJSONStringContent(_ text: String, to output: inout [UInt8]) {
    let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0..<0x20:
            output.append(contentsOf: Array(#"\u00"#.utf8))
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0x0F)])
        default: output.append(byte)
        }
    }
}

/// Bytes `appendJSONStringContent` writes for `text`.
func jsonEscapedCount(_ text: String) -> Int {
    var count = 0
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x0C, UInt8(ascii: "\n"), UInt8(ascii: "\r"),
             UInt8(ascii: "\t"):
            count += 2
        case 0..<0x20: count += 6
        default: count += 1
        }
    }
    return count
}

/// A random (version 4, RFC 9562 §5.4) UUID in canonical 8-4-4-4-12 form,
/// uppercase as APNs writes its own ids.
public func makeAPNsID(random: inout some RandomNumberGenerator) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(16)
    for _ in 0..<2 {
        var word = random.next()
        for _ in 0..<8 {
            bytes.append(UInt8(truncatingIfNeeded: word))
            word >>= 8
        }
    }
    bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
    bytes[8] = bytes[8] & 0x3F | 0x80  // variant 10xx
    let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(36)
    for (index, byte) in bytes.enumerated() {
        if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
        text.append(hexDigits[Int(byte >> 4)])
        text.append(hexDigits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}
