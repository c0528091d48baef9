// The APNs payload of the metatext-apns dialect (WIRE.md §2.2), as
// Metatext, Feditext and Mona decode it, key by key:
// {"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},
//  "i":"<id>","m":"<base64url body, padded>"[,"s":"<salt>","k":"<dh>"]}
// `s` and `k` only for aesgcm, as the sender wrote them; for aes128gcm `m`
// is the whole body, whose RFC 8188 header carries salt and key.
private let afterAlert = #","mutable-content":1},"i":""#
private let restAfterAlert = Array(afterAlert.utf8)
private let defaultStart = apsStart(alert: .metatextDefault, rest: afterAlert)
private let bodyPart = Array(#"","m":""#.utf8)
private let saltPart = Array(#"","s":""#.utf8)
private let keyPart = Array(#"","k":""#.utf8)

/// The payload's parts in order, handed to `sink` (see PayloadSink.swift).
/// `alert`: the app's own, nil for the default.
@inline(__always)
func emitMetatextPayload(for message: WebPushMessage, id: String, alert: APNsAlert?, content: PayloadContent,
                         to sink: inout some PayloadSink) {
    sink.writeAPSStart(alert: alert, defaultStart: defaultStart, rest: restAfterAlert)
    sink.writeJSONEscaped(id)
    if content == .whole {
        sink.write(bodyPart)
        sink.writeBase64URL(message.body, padded: true)
    }
    if case .aesgcm(let dh, let salt) = message.encoding {
        // parseWebPush keeps the text of every aesgcm message; one built
        // without it gets the keys in base64url, which the apps decode the
        // same.
        sink.write(saltPart)
        if let text = message.aesgcmText {
            sink.writeJSONEscaped(text.salt)
        } else {
            sink.writeBase64URL(salt, padded: false)
        }
        sink.write(keyPart)
        if let text = message.aesgcmText {
            sink.writeJSONEscaped(text.dh)
        } else {
            sink.writeBase64URL(dh, padded: false)
        }
    }
    sink.write(payloadSuffix)
}

/// Exact size in bytes of the metatext payload for `message` to `id`.
public func metatextPayloadSize(for message: WebPushMessage, id: String, alert: APNsAlert? = nil,
                                content: PayloadContent = .whole) -> Int {
    var counter = PayloadSizeCounter()
    emitMetatextPayload(for: message, id: id, alert: alert, content: content, to: &counter)
    return counter.count
}

/// The metatext payload bytes for `message` to the account `id`.
public func makeMetatextPayload(for message: WebPushMessage, id: String, alert: APNsAlert? = nil,
                                content: PayloadContent = .whole) -> [UInt8] {
    makeMetatextPayload(for: message, id: id, alert: alert, content: content,
                        capacity: metatextPayloadSize(for: message, id: id, alert: alert, content: content))
}

/// Writes the payload in place into storage of exactly `size` bytes.
func makeMetatextPayload(for message: WebPushMessage, id: String, alert: APNsAlert?, content: PayloadContent,
                         capacity size: Int) -> [UInt8] {
    payloadBytes(size: size, write: { emitMetatextPayload(for: message, id: id, alert: alert, content: content, to: &$0) },
                 append: { emitMetatextPayload(for: message, id: id, alert: alert, content: content, to: &$0) })
}
