import Foundation

/// One notification the emulator accepted (answered 200).
public struct ReceivedNotification: Sendable {
    /// The hex device token from the path, as sent.
    public var deviceToken: String
    /// Every regular header field of the request, in arrival order.
    public var headers: [(name: String, value: String)]
    public var payload: [UInt8]
    /// The apns-id answered: the client's, or one the emulator generated.
    public var apnsID: String
    /// True when the client sent no apns-id.
    public var apnsIDWasGenerated: Bool
    /// The `apns-unique-id` answered: a fresh lowercase UUID when the
    /// emulator plays the development environment, where APNs sends one
    /// on every answer; nil in production, where APNs sends none.
    public var uniqueID: String?
    public var topic: String?
    public var priority: Int?
    public var expiration: Int?
    public var collapseID: String?
    public var pushType: String?
    /// The client certificate's subject UID or the provider token's `iss`
    /// (nil with authentication `.none`).
    public var authenticatedAs: String?
    /// The provider token's key id (`kid`; nil without token authentication):
    /// which of several keys signed it.
    public var providerKeyID: String?
    /// Which provider token it came with, as the first 16 hex digits of
    /// the token's SHA-256 (nil without token authentication): a test
    /// counts the distinct tokens of a key without the token itself, a
    /// credential for an hour, reaching a record or a log.
    public var providerTokenFingerprint: String?
    /// Which connection (numbered from 1 in accept order) and stream carried it.
    public var connectionID: Int
    public var streamID: Int32

    public init(deviceToken: String, headers: [(name: String, value: String)], payload: [UInt8], apnsID: String,
                apnsIDWasGenerated: Bool, uniqueID: String? = nil, topic: String?, priority: Int?, expiration: Int?, collapseID: String?,
                pushType: String?, authenticatedAs: String?, providerKeyID: String? = nil,
                providerTokenFingerprint: String? = nil, connectionID: Int, streamID: Int32) {
        self.deviceToken = deviceToken
        self.headers = headers
        self.payload = payload
        self.apnsID = apnsID
        self.apnsIDWasGenerated = apnsIDWasGenerated
        self.uniqueID = uniqueID
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.pushType = pushType
        self.authenticatedAs = authenticatedAs
        self.providerKeyID = providerKeyID
        self.providerTokenFingerprint = providerTokenFingerprint
        self.connectionID = connectionID
        self.streamID = streamID
    }

    /// The first header named `name` (lowercase).
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// The payload as UTF-8 text (invalid sequences replaced).
    public var payloadText: String { String(decoding: payload, as: UTF8.self) }

    /// One line of JSON (no trailing newline) for `--print`/`--record`:
    /// `token`, `apns_id`, `unique_id`, `topic`, `push_type`, `priority`, `expiration`,
    /// `collapse_id`, `authenticated_as`, `key_id` and `token_fingerprint` (absent when unknown), `headers` as
    /// `[[name, value], …]` and `payload` as text. Keys sorted. The
    /// `authorization` value (a provider token, valid for an hour) is
    /// replaced by `<redacted>`: these lines end up in logs.
    public var jsonLine: String {
        var object: [String: Any] = [
            "token": deviceToken,
            "apns_id": apnsID,
            "headers": headers.map { [$0.name, $0.name == "authorization" ? "<redacted>" : $0.value] },
            "payload": payloadText,
        ]
        if let uniqueID { object["unique_id"] = uniqueID }
        if let topic { object["topic"] = topic }
        if let pushType { object["push_type"] = pushType }
        if let priority { object["priority"] = priority }
        if let expiration { object["expiration"] = expiration }
        if let collapseID { object["collapse_id"] = collapseID }
        if let authenticatedAs { object["authenticated_as"] = authenticatedAs }
        if let providerKeyID { object["key_id"] = providerKeyID }
        if let providerTokenFingerprint { object["token_fingerprint"] = providerTokenFingerprint }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
