// A Web Push message becomes APNs' request (WIRE.md §2): the
// payload in the target's dialect, the headers from the message's TTL,
// urgency and topic.

import APNsCore
import HTTPCore

/// The most a Web Push body may be: RFC 8030 §7.2 has a push service take
/// 4096 bytes and answer 413 beyond what it takes.
public let webPushMaxBodyBytes = 4096

/// Builds the APNs request for a validated message, its payload in the
/// target's dialect (WIRE.md §2). A body that does not fit APNs'
/// 4096-byte payload once encoded goes without its ciphertext
/// (`PayloadContent.withoutCiphertext`): never refused for its size when
/// RFC 8030 lets a sender send it.
///
/// - Parameters:
///   - topic: `apns-topic`, the app's bundle id.
///   - credential: the app's credential for the target's environment.
///   - alert: the app's own `aps.alert`; nil for the dialect's default.
///   - apnsID: a UUID string (see `makeAPNsID`).
///   - now: current unix time in seconds; `apns-expiration` is now + TTL, or
///     `0` for TTL 0 (deliver once, do not store).
/// - Returns: the notification, and whether its ciphertext was dropped.
/// - Throws: 413 for a body over 4096 bytes, or a route (`x`, `i`) that
///   leaves no room even without the ciphertext.
public func makeNotification(target: RelayTarget, message: WebPushMessage, topic: String, credential: CredentialID,
                             alert: APNsAlert? = nil, apnsID: String, now: Int)
    throws(WebPushError) -> (notification: APNsNotification, ciphertextDropped: Bool) {
    if message.body.count > webPushMaxBodyBytes {
        throw WebPushError(status: 413, reason: "body of \(message.body.count) bytes (max \(webPushMaxBodyBytes))")
    }
    var content = PayloadContent.whole
    var size = payloadSize(target.dialect, message, alert: alert, content: content)
    if size > apnsMaxPayloadBytes {
        content = .withoutCiphertext
        size = payloadSize(target.dialect, message, alert: alert, content: content)
        if size > apnsMaxPayloadBytes {
            throw WebPushError(status: 413, reason: "the endpoint's path makes a \(size)-byte APNs payload "
                + "without the body (max \(apnsMaxPayloadBytes))")
        }
    }
    let payload: [UInt8]
    switch target.dialect {
    case .tootRelay(let extra):
        payload = makeAPNsPayload(for: message, extra: extra, alert: alert, content: content, capacity: size)
    case .metatext(let id):
        payload = makeMetatextPayload(for: message, id: id, alert: alert, content: content, capacity: size)
    }

    let (expiresAt, overflowed) = now.addingReportingOverflow(message.ttl)
    let expiration = message.ttl == 0 ? 0 : overflowed ? Int.max : expiresAt
    // Reserved at its final size: one allocation, no growth.
    let headers = APNsRequestHeaders(pushType: "alert", topic: topic, capacity: message.topic == nil ? 5 : 6) { headers in
        headers.append(HTTPField(name: "apns-priority", value: decimalText(message.urgency.apnsPriority)))
        headers.append(HTTPField(name: "apns-expiration", value: decimalText(expiration)))
        if let collapseID = message.topic { headers.append(HTTPField(name: "apns-collapse-id", value: collapseID)) }
        headers.append(HTTPField(name: "apns-id", value: apnsID))
    }
    let notification = APNsNotification(to: target.deviceToken, environment: target.environment,
                                        credential: credential, headers: headers, payload: payload, apnsID: apnsID,
                                        ttl: message.ttl)
    return (notification, content == .withoutCiphertext)
}

private func payloadSize(_ dialect: PayloadDialect, _ message: WebPushMessage, alert: APNsAlert?,
                         content: PayloadContent) -> Int {
    switch dialect {
    case .tootRelay(let extra): apnsPayloadSize(for: message, extra: extra, alert: alert, content: content)
    case .metatext(let id): metatextPayloadSize(for: message, id: id, alert: alert, content: content)
    }
}

