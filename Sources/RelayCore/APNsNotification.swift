// What goes to APNs (ARCHITECTURE.md §2): the path and headers of one
// notification's HTTP/2 request; the payload is APNsPayload.swift's.

import HTTP1

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
    /// Which of the relay's credentials sends it (the app's, for its
    /// environment): the APNs client keeps connections per credential.
    public var credential: CredentialID = .primary

    public init(environment: APNsEnvironment, deviceToken: String, path: String, headers: [HTTPField],
                payload: [UInt8], apnsID: String, ttl: Int, credential: CredentialID = .primary) {
        self.environment = environment
        self.deviceToken = deviceToken
        self.path = path
        self.headers = headers
        self.payload = payload
        self.apnsID = apnsID
        self.ttl = ttl
        self.credential = credential
    }
}

/// Builds the APNs request for a validated message, its payload in the
/// target's dialect (ARCHITECTURE.md §2).
///
/// - Parameters:
///   - topic: `apns-topic`, the app's bundle id.
///   - alert: the app's own `aps.alert`; nil for the dialect's default.
///   - apnsID: a UUID string (see `makeAPNsID`).
///   - now: current unix time in seconds; `apns-expiration` is now + TTL, or
///     `0` for TTL 0 (deliver once, do not store).
/// - Throws: 413 when the payload (with `x` or `i`) exceeds 4096 bytes.
public func makeNotification(target: RelayTarget, message: WebPushMessage, topic: String, alert: APNsAlert? = nil,
                             apnsID: String, now: Int) throws(WebPushError) -> APNsNotification {
    let size: Int
    switch target.dialect {
    case .tootRelay(let extra): size = apnsPayloadSize(for: message, extra: extra, alert: alert)
    case .metatext(let id): size = metatextPayloadSize(for: message, id: id, alert: alert)
    }
    if size > apnsMaxPayloadBytes {
        throw WebPushError(
            status: 413, reason: "body of \(message.body.count) bytes makes a \(size)-byte APNs payload (max 4096)")
    }
    let payload: [UInt8]
    switch target.dialect {
    case .tootRelay(let extra): payload = makeAPNsPayload(for: message, extra: extra, alert: alert, capacity: size)
    case .metatext(let id): payload = makeMetatextPayload(for: message, id: id, alert: alert, capacity: size)
    }

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

