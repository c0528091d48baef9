// What goes to APNs (WIRE.md §2): the path and headers of one
// notification's HTTP/2 request; the payload is APNsPayload.swift's.

import HTTPCore

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
