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
    public var credential: CredentialID

    /// The one way every route's notification becomes APNs' request:
    /// `POST /3/device/<token>` with headers that carry the app's topic.
    public init(to deviceToken: String, environment: APNsEnvironment, credential: CredentialID,
                headers: APNsRequestHeaders, payload: [UInt8], apnsID: String, ttl: Int) {
        self.environment = environment
        self.deviceToken = deviceToken
        self.path = "/3/device/" + deviceToken
        self.headers = headers.fields
        self.payload = payload
        self.apnsID = apnsID
        self.ttl = ttl
        self.credential = credential
    }
}

/// A notification's headers with the app's `apns-topic` in its place, after
/// `apns-push-type` when the route's headers start with it (the order of
/// Apple's examples), else first: the only way to make an
/// `APNsNotification`'s headers, so no route sends one without its app's
/// topic. Made once per notification and shared by its tokens' requests.
public struct APNsRequestHeaders: Sendable {
    public let fields: [HTTPField]

    /// `headers`: the route's own, without `apns-topic` (a route that sends
    /// many notifications with the same headers makes this once).
    public init(topic: String, _ headers: [HTTPField]) {
        var fields = headers
        let position = fields.first?.name == "apns-push-type" ? 1 : 0
        fields.insert(HTTPField(name: "apns-topic", value: topic), at: position)
        self.fields = fields
    }

    /// `apns-push-type`, `apns-topic`, then what `rest` appends, written in
    /// place into one allocation of `capacity` fields: the Web Push path
    /// makes headers for every notification.
    @inline(__always)
    public init(pushType: String, topic: String, capacity: Int, rest: (inout [HTTPField]) -> Void) {
        var fields: [HTTPField] = []
        fields.reserveCapacity(capacity)
        fields.append(HTTPField(name: "apns-push-type", value: pushType))
        fields.append(HTTPField(name: "apns-topic", value: topic))
        rest(&fields)
        self.fields = fields
    }
}

/// The most a Web Push body may be: RFC 8030 §7.2 has a push service take
/// 4096 bytes and answer 413 beyond what it takes.
public let webPushMaxBodyBytes = 4096

/// Builds the APNs request for a validated message, its payload in the
/// target's dialect (ARCHITECTURE.md §2). A body that does not fit APNs'
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

