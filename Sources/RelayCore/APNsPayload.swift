// The APNs payload the iOS clients of toot-relay decode, key by key
// (WIRE.md §2):
// {"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":"<z85 body>"
//  [,"k":"<z85 dh>","s":"<z85 salt>"][,"x":"<extra>"]}
// z85 digits need no JSON escaping (the alphabet has neither `"` nor `\`).
// The alert is the app's (APNsAlert.swift); 🎺 unless it has its own.
private let afterAlert = #","mutable-content":1,"content-available":1},"p":""#
private let restAfterAlert = Array(afterAlert.utf8)
private let defaultStart = apsStart(alert: .tootRelayDefault, rest: afterAlert)
private let keyPart = Array(#"","k":""#.utf8)
private let saltPart = Array(#"","s":""#.utf8)
private let extraPart = Array(#"","x":""#.utf8)
let payloadSuffix = Array(#""}"#.utf8)
// Without `p`: the aps object closes, and each key opens and closes itself.
private let afterAlertWithoutCiphertext = #","mutable-content":1,"content-available":1}"#
private let restAfterAlertWithoutCiphertext = Array(afterAlertWithoutCiphertext.utf8)
private let defaultStartWithoutCiphertext = apsStart(alert: .tootRelayDefault, rest: afterAlertWithoutCiphertext)
private let firstKeyPart = Array(#","k":""#.utf8)
private let firstExtraPart = Array(#","x":""#.utf8)
private let closingQuote = Array(#"""#.utf8)
private let closingBrace = Array("}".utf8)

/// The payload's parts in order, handed to `sink`: the one enumeration
/// behind its size, its in-place writing and the appending fallback.
/// `alert`: the app's own, nil for the default.
@inline(__always)
private func emitAPNsPayload(for message: WebPushMessage, extra: String?, alert: APNsAlert?, content: PayloadContent,
                             to sink: inout some PayloadSink) {
    guard content == .whole else {
        return emitAPNsPayloadWithoutCiphertext(for: message, extra: extra, alert: alert, to: &sink)
    }
    sink.writeAPSStart(alert: alert, defaultStart: defaultStart, rest: restAfterAlert)
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

/// The same keys without `p` (`PayloadContent.withoutCiphertext`).
private func emitAPNsPayloadWithoutCiphertext(for message: WebPushMessage, extra: String?, alert: APNsAlert?,
                                              to sink: inout some PayloadSink) {
    sink.writeAPSStart(alert: alert, defaultStart: defaultStartWithoutCiphertext, rest: restAfterAlertWithoutCiphertext)
    if case .aesgcm(let dh, let salt) = message.encoding {
        sink.write(firstKeyPart)
        sink.writeZ85(dh)
        sink.write(saltPart)
        sink.writeZ85(salt)
        sink.write(closingQuote)
    }
    if let extra {
        sink.write(firstExtraPart)
        sink.writeJSONEscaped(extra)
        sink.write(closingQuote)
    }
    sink.write(closingBrace)
}

/// Exact size in bytes of the APNs payload for `message` with `extra`.
public func apnsPayloadSize(for message: WebPushMessage, extra: String?, alert: APNsAlert? = nil,
                            content: PayloadContent = .whole) -> Int {
    var counter = PayloadSizeCounter()
    emitAPNsPayload(for: message, extra: extra, alert: alert, content: content, to: &counter)
    return counter.count
}

/// The APNs payload bytes.
public func makeAPNsPayload(for message: WebPushMessage, extra: String?, alert: APNsAlert? = nil,
                            content: PayloadContent = .whole) -> [UInt8] {
    makeAPNsPayload(for: message, extra: extra, alert: alert, content: content,
                    capacity: apnsPayloadSize(for: message, extra: extra, alert: alert, content: content))
}

/// Writes the payload in place into storage of exactly `size` bytes; falls
/// back to appending should `size` not match what is written (it always
/// does: both follow `emitAPNsPayload`).
func makeAPNsPayload(for message: WebPushMessage, extra: String?, alert: APNsAlert?, content: PayloadContent,
                     capacity size: Int) -> [UInt8] {
    payloadBytes(size: size, write: { emitAPNsPayload(for: message, extra: extra, alert: alert, content: content, to: &$0) },
                 append: { emitAPNsPayload(for: message, extra: extra, alert: alert, content: content, to: &$0) })
}

/// The payload built by appending to an array: the fallback of
/// `makeAPNsPayload`, through the array encoders (`Z85.encode(_:into:)`).
func appendAPNsPayload(for message: WebPushMessage, extra: String?, capacity: Int) -> [UInt8] {
    var payload: [UInt8] = []
    payload.reserveCapacity(capacity)
    emitAPNsPayload(for: message, extra: extra, alert: nil, content: .whole, to: &payload)
    return payload
}
