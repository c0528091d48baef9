// The FCM message a Web Push message becomes (FCM HTTP v1,
// projects.messages.send): a data message carrying the fields the APNs
// payload of the same URL carries (WIRE.md §2: `p`, `k`, `s`, `x`, z85),
// as strings in `message.data`, so an app decrypts iOS and Android pushes
// with one code path:
// {"message":{"token":"<token>","data":{"p":"<z85 body>"[,"k":"<z85 dh>","s":"<z85 salt>"][,"x":"<extra>"]},
//  "android":{"ttl":"<n>s"[,"collapse_key":"<topic>"],"priority":"normal"|"high"}}}
// Written by the APNs payload's sinks (PayloadSink.swift): counted, then
// written in place. A body whose data does not fit FCM's 4096 bytes goes
// without `p`, with a notification title for Android to show instead.

import FCMCore

/// The title an Android notification shows when the ciphertext was dropped:
/// the toot-relay dialect's default alert.
public let fcmDefaultTitle = "🎺"

private let tokenStart = Array(#"{"message":{"token":""#.utf8)
private let dataStart = Array(#"","data":{"#.utf8)
private let ciphertextMember = Array(#""p":""#.utf8)
private let dhMember = Array(#""k":""#.utf8)
private let dhMemberAfterAnother = Array(#"","k":""#.utf8)
private let saltMember = Array(#"","s":""#.utf8)
private let extraMember = Array(#""x":""#.utf8)
private let extraMemberAfterAnother = Array(#"","x":""#.utf8)
private let closingQuote = Array(#"""#.utf8)
private let ttlStart = Array(#"},"android":{"ttl":""#.utf8)
private let collapseKeyStart = Array(#"s","collapse_key":""#.utf8)
private let normalPriority = Array(#"","priority":"normal""#.utf8)
private let highPriority = Array(#"","priority":"high""#.utf8)
private let titleStart = Array(#","notification":{"title":""#.utf8)
private let titleEnd = Array(#""}"#.utf8)
private let messageEnd = Array("}}}".utf8)
private let ttlEndWithoutCollapseKey = Array("s".utf8)

extension Urgency {
    /// Android's priority: very-low and low let the device save power.
    public var fcmPriority: FCMAndroidPriority {
        switch self {
        case .veryLow, .low: .normal
        case .normal, .high: .high
        }
    }
}

/// The message's parts in order, handed to `sink`: the one enumeration
/// behind its size, its in-place writing and the appending fallback.
@inline(__always)
private func emitFCMMessage(token: FCMToken, message: WebPushMessage, extra: String?, title: String,
                            content: PayloadContent, to sink: inout some PayloadSink) {
    sink.write(tokenStart)
    // FCMToken's syntax (letters, digits, -, _, :) has nothing to escape.
    sink.writeVerbatim(token.text)
    sink.write(dataStart)
    var wroteMember = false
    if content == .whole {
        sink.write(ciphertextMember)
        sink.writeZ85(message.body)
        wroteMember = true
    }
    if case .aesgcm(let dh, let salt) = message.encoding {
        sink.write(wroteMember ? dhMemberAfterAnother : dhMember)
        sink.writeZ85(dh)
        sink.write(saltMember)
        sink.writeZ85(salt)
        wroteMember = true
    }
    if let extra {
        sink.write(wroteMember ? extraMemberAfterAnother : extraMember)
        sink.writeJSONEscaped(extra)
        wroteMember = true
    }
    if wroteMember { sink.write(closingQuote) }
    sink.write(ttlStart)
    // A small string (no allocation) of digits.
    sink.writeVerbatim(String(min(message.ttl, FCMMessageLimits.maxTTLSeconds)))
    if let topic = message.topic {
        sink.write(collapseKeyStart)
        sink.writeJSONEscaped(topic)
    } else {
        sink.write(ttlEndWithoutCollapseKey)
    }
    sink.write(message.urgency.fcmPriority == .high ? highPriority : normalPriority)
    if content == .withoutCiphertext {
        sink.write(titleStart)
        sink.writeJSONEscaped(title)
        sink.write(titleEnd)
    }
    sink.write(messageEnd)
}

/// The size FCM counts against `FCMMessageLimits.maxDataBytes`: the data's
/// keys and values (UTF-8, unescaped), and without the ciphertext the
/// notification's title too (counted as FCM may count it, to stay clear of
/// its limit either way).
public func fcmDataSize(for message: WebPushMessage, extra: String?, title: String = fcmDefaultTitle,
                        content: PayloadContent = .whole) -> Int {
    var size = 0
    if content == .whole { size += 1 + Z85.encodedCount(message.body.count) }
    if case .aesgcm(let dh, let salt) = message.encoding {
        size += 1 + Z85.encodedCount(dh.count) + 1 + Z85.encodedCount(salt.count)
    }
    if let extra { size += 1 + extra.utf8.count }
    if content == .withoutCiphertext { size += "title".utf8.count + title.utf8.count }
    return size
}

/// Exact size in bytes of the FCM message.
public func fcmMessageSize(token: FCMToken, message: WebPushMessage, extra: String?, title: String = fcmDefaultTitle,
                           content: PayloadContent = .whole) -> Int {
    var counter = PayloadSizeCounter()
    emitFCMMessage(token: token, message: message, extra: extra, title: title, content: content, to: &counter)
    return counter.count
}

/// Builds the body of FCM's send request for a validated message. A body
/// whose data does not fit FCM's limit goes without its ciphertext, the
/// notification `title` shown instead (`PayloadContent.withoutCiphertext`,
/// as on the APNs path): never refused for its size when RFC 8030 lets a
/// sender send it.
///
/// - Returns: the message's JSON, and whether its ciphertext was dropped.
/// - Throws: 413 for a body over 4096 bytes, or an extra path that leaves no
///   room even without the ciphertext.
public func makeFCMMessage(token: FCMToken, message: WebPushMessage, extra: String?, title: String = fcmDefaultTitle)
    throws(WebPushError) -> (body: [UInt8], ciphertextDropped: Bool) {
    if message.body.count > webPushMaxBodyBytes {
        throw WebPushError(status: 413, reason: "body of \(message.body.count) bytes (max \(webPushMaxBodyBytes))")
    }
    var content = PayloadContent.whole
    if fcmDataSize(for: message, extra: extra, title: title, content: content) > FCMMessageLimits.maxDataBytes {
        content = .withoutCiphertext
        let size = fcmDataSize(for: message, extra: extra, title: title, content: content)
        if size > FCMMessageLimits.maxDataBytes {
            throw WebPushError(status: 413, reason: "the endpoint's path makes \(size) bytes of FCM data "
                + "without the body (max \(FCMMessageLimits.maxDataBytes))")
        }
    }
    let size = fcmMessageSize(token: token, message: message, extra: extra, title: title, content: content)
    let body = payloadBytes(
        size: size,
        write: { emitFCMMessage(token: token, message: message, extra: extra, title: title, content: content, to: &$0) },
        append: { emitFCMMessage(token: token, message: message, extra: extra, title: title, content: content, to: &$0) })
    return (body, content == .withoutCiphertext)
}
