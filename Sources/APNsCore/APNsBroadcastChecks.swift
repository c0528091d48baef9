// APNs' rules for a broadcast API call that need no state (Apple, "Sending
// broadcast push notification requests to APNs", "Sending channel
// management requests to APNs", and the broadcast reasons of "Handling
// error responses from APNs"): the relay refuses by them before a round
// trip, the emulator answers by them. Pure: headers are read through the
// caller's lookup (HTTP/1.1 and HTTP/2 keep them differently).

import JSON

public enum APNsBroadcastChecks {
    /// The one `apns-push-type` of a broadcast.
    public static let broadcastPushType = "liveactivity"
    /// The one `push-type` of a channel.
    public static let channelPushType = "LiveActivity"

    /// A broadcast's headers and payload, in APNs' order of reasons:
    /// `apns-channel-id` (MissingChannelId, BadChannelId),
    /// `apns-push-type` (MissingPushType; not liveactivity:
    /// InvalidPushType), `apns-priority` (10, 5 or 1: BadPriority),
    /// `apns-expiration` (decimal seconds: BadExpirationDate), `apns-id`
    /// (a UUID: BadMessageId), the payload (empty: PayloadEmpty; over 5 KB:
    /// 413 PayloadTooLarge; not a JSON object: BadRequestPayload).
    public static func broadcast(header: (String) -> String?, body: [UInt8]) -> APNsBroadcastRefusal? {
        if let refusal = channelID(header: header) { return refusal }
        guard let pushType = header("apns-push-type") else { return APNsBroadcastRefusal(.missingPushType) }
        guard pushType == broadcastPushType else { return APNsBroadcastRefusal(.invalidPushType) }
        if let priority = header("apns-priority"), !["10", "5", "1"].contains(priority) {
            return APNsBroadcastRefusal(.badPriority)
        }
        if let expiration = header("apns-expiration"), expirationSeconds(expiration) == nil {
            return APNsBroadcastRefusal(.badExpirationDate)
        }
        if let apnsID = header("apns-id"), !isUUID(apnsID) { return APNsBroadcastRefusal(.badMessageId) }
        guard !body.isEmpty else { return APNsBroadcastRefusal(.payloadEmpty) }
        guard body.count <= APNsChannelID.maximumPayloadBytes else { return APNsBroadcastRefusal(.payloadTooLarge) }
        guard case .object? = try? parseStrictJSON(body) else { return APNsBroadcastRefusal(.badRequestPayload) }
        return nil
    }

    /// `apns-channel-id` of a broadcast, a read or a delete: absent,
    /// MissingChannelId; not base64 or too long, BadChannelId.
    public static func channelID(header: (String) -> String?) -> APNsBroadcastRefusal? {
        guard let channelID = header("apns-channel-id") else { return APNsBroadcastRefusal(.missingChannelId) }
        return APNsChannelID.isWellFormed(channelID) ? nil : APNsBroadcastRefusal(.badChannelId)
    }

    /// `apns-expiration`: UNIX seconds, 1 to 18 decimal digits.
    public static func expirationSeconds(_ text: String) -> Int? {
        guard (1...18).contains(text.utf8.count),
              text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text)
    }

    /// 8-4-4-4-12 hex digits, either case (RFC 9562 §4).
    public static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.utf8.count) == [8, 4, 4, 4, 12]
            && groups.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit } }
    }
}

/// What a new channel asks for: the body of `POST /1/apps/<bundle id>/channels`,
/// `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
public struct APNsChannelSettings: Sendable, Equatable {
    /// 0: No Messages Stored (a broadcast's `apns-expiration` must be 0);
    /// 1: Most Recent Message Stored.
    public var messageStoragePolicy: Int

    public init(messageStoragePolicy: Int) {
        self.messageStoragePolicy = messageStoragePolicy
    }

    /// Reads a create body as APNs does: not JSON, BadRequestPayload; an
    /// attribute APNs does not know, BadRequestParams; no `push-type`,
    /// MissingPushType; another than LiveActivity, InvalidPushType; no
    /// policy or one other than 0 and 1, `MissingChannelQueueSize`. Apple's
    /// table lacks that last reason; it is what APNs answers (node-apn's
    /// list of broadcast reasons records it as seen, undocumented).
    public init(body: [UInt8]) throws(APNsBroadcastRefusal) {
        guard case .object(let members)? = try? parseStrictJSON(body) else {
            throw APNsBroadcastRefusal(.badRequestPayload)
        }
        let known: Set<String> = ["message-storage-policy", "push-type"]
        guard members.allSatisfy({ known.contains($0.name) }) else { throw APNsBroadcastRefusal(.badRequestParams) }
        let value = JSONValue.object(members)
        guard case .string(let pushType)? = value["push-type"] else { throw APNsBroadcastRefusal(.missingPushType) }
        guard pushType == APNsBroadcastChecks.channelPushType else { throw APNsBroadcastRefusal(.invalidPushType) }
        guard case .number(let policy)? = value["message-storage-policy"], policy == "0" || policy == "1" else {
            throw Self.missingChannelQueueSize
        }
        messageStoragePolicy = policy == "1" ? 1 : 0
    }

    public static let missingChannelQueueSize = APNsBroadcastRefusal(status: 400, reason: "MissingChannelQueueSize")

    /// `{"message-storage-policy":N,"push-type":"LiveActivity"}`: a read's answer.
    public var json: [UInt8] {
        Array("{\"message-storage-policy\":\(messageStoragePolicy),\"push-type\":\"LiveActivity\"}".utf8)
    }
}
