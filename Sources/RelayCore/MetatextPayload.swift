// The APNs payload of the metatext-apns dialect (ARCHITECTURE.md §2.2), as
// Metatext, Feditext and Mona decode it, key by key:
// {"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},
//  "i":"<id>","m":"<base64url body, padded>"[,"s":"<salt>","k":"<dh>"]}
// `s` and `k` only for aesgcm, as the sender wrote them; for aes128gcm `m`
// is the whole body, whose RFC 8188 header carries salt and key.
private let afterAlert = Array(#","mutable-content":1},"i":""#.utf8)
private let bodyPart = Array(#"","m":""#.utf8)
private let saltPart = Array(#"","s":""#.utf8)
private let keyPart = Array(#"","k":""#.utf8)

/// metatext-apns' payload for `message`, to the account `id`.
struct MetatextPayload: APNsPayloadParts {
    let message: WebPushMessage
    let id: String
    let alert: APNsAlert

    func emit(to sink: inout some PayloadSink) {
        sink.write(apsAlertStart)
        sink.write(alert.json)
        sink.write(afterAlert)
        sink.writeJSONEscaped(id)
        sink.write(bodyPart)
        sink.writeBase64URL(message.body, padded: true)
        if case .aesgcm(let dh, let salt) = message.encoding {
            // parseWebPush keeps the text of every aesgcm message; one
            // built without it gets the keys in base64url, which the apps
            // decode the same.
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
}

/// The metatext payload bytes for `message` to the account `id`.
public func makeMetatextPayload(for message: WebPushMessage, id: String,
                                alert: APNsAlert = .metatextDefault) -> [UInt8] {
    let payload = MetatextPayload(message: message, id: id, alert: alert)
    return payload.bytes(capacity: payload.size)
}

/// Exact size in bytes of the metatext payload for `message` to `id`.
public func metatextPayloadSize(for message: WebPushMessage, id: String,
                                alert: APNsAlert = .metatextDefault) -> Int {
    MetatextPayload(message: message, id: id, alert: alert).size
}
