// The APNs payload the iOS clients of toot-relay decode, key by key
// (ARCHITECTURE.md §2):
// {"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":"<z85 body>"
//  [,"k":"<z85 dh>","s":"<z85 salt>"][,"x":"<extra>"]}
// z85 digits need no JSON escaping (the alphabet has neither `"` nor `\`).
// The alert is the app's (APNsAlert.swift); 🎺 unless it has its own.
let apsAlertStart = Array(#"{"aps":{"alert":"#.utf8)
private let afterAlert = Array(#","mutable-content":1,"content-available":1},"p":""#.utf8)
private let keyPart = Array(#"","k":""#.utf8)
private let saltPart = Array(#"","s":""#.utf8)
private let extraPart = Array(#"","x":""#.utf8)
let payloadSuffix = Array(#""}"#.utf8)

/// toot-relay's payload for `message`, with `x` when there is an extra path.
struct TootRelayPayload: APNsPayloadParts {
    let message: WebPushMessage
    let extra: String?
    let alert: APNsAlert

    @inline(__always)
    func emit(to sink: inout some PayloadSink) {
        sink.write(apsAlertStart)
        sink.write(alert.json)
        sink.write(afterAlert)
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
}

/// Exact size in bytes of the APNs payload for `message` with `extra`.
public func apnsPayloadSize(for message: WebPushMessage, extra: String?,
                            alert: APNsAlert = .tootRelayDefault) -> Int {
    TootRelayPayload(message: message, extra: extra, alert: alert).size
}

/// The APNs payload bytes.
public func makeAPNsPayload(for message: WebPushMessage, extra: String?,
                            alert: APNsAlert = .tootRelayDefault) -> [UInt8] {
    let payload = TootRelayPayload(message: message, extra: extra, alert: alert)
    return payload.bytes(capacity: payload.size)
}

/// The payload built by appending (the fallback of the in-place writing).
func appendAPNsPayload(for message: WebPushMessage, extra: String?, capacity: Int) -> [UInt8] {
    TootRelayPayload(message: message, extra: extra, alert: .tootRelayDefault).appendedBytes(capacity: capacity)
}
