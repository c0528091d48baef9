import APNsCore
import Testing

@Suite("APNs' broadcast API rules")
struct APNsBroadcastChecksTests {
    static let channel = "dGVzdC1jaGFubmVsLWlkMTI="
    static let payload = Array(#"{"aps":{"event":"update","content-state":{}}}"#.utf8)

    static func headers(_ changes: [String: String?] = [:]) -> [String: String] {
        var fields: [String: String?] = ["apns-channel-id": channel, "apns-push-type": "liveactivity",
                                         "apns-priority": "10", "apns-expiration": "0"]
        for (name, value) in changes { fields[name] = value }
        return fields.compactMapValues { $0 }
    }

    /// (headers, body, the refusal's reason; nil: passes).
    static let broadcasts: [([String: String], [UInt8], String?)] = [
        (headers(), payload, nil),
        (headers(["apns-priority": "1"]), payload, nil),
        (headers(["apns-priority": "5", "apns-expiration": "1900000000"]), payload, nil),
        (headers(["apns-id": "123e4567-e89b-12d3-a456-426614174000"]), payload, nil),
        (headers(["apns-channel-id": nil]), payload, "MissingChannelId"),
        (headers(["apns-channel-id": "not base64"]), payload, "BadChannelId"),
        (headers(["apns-channel-id": String(repeating: "A", count: 132)]), payload, "BadChannelId"),
        (headers(["apns-push-type": nil]), payload, "MissingPushType"),
        (headers(["apns-push-type": "LiveActivity"]), payload, "InvalidPushType"),
        (headers(["apns-push-type": "alert"]), payload, "InvalidPushType"),
        (headers(["apns-priority": "0"]), payload, "BadPriority"),
        (headers(["apns-expiration": "-1"]), payload, "BadExpirationDate"),
        (headers(["apns-expiration": ""]), payload, "BadExpirationDate"),
        (headers(["apns-id": "123"]), payload, "BadMessageId"),
        (headers(), [], "PayloadEmpty"),
        (headers(), Array("{\"aps\":\"\(String(repeating: "x", count: 5200))\"}".utf8), "PayloadTooLarge"),
        (headers(), Array("[]".utf8), "BadRequestPayload"),
        (headers(), Array("{".utf8), "BadRequestPayload"),
    ]

    @Test("a broadcast's headers and payload, in APNs' order", arguments: broadcasts)
    func broadcast(_ row: ([String: String], [UInt8], String?)) {
        let refusal = APNsBroadcastChecks.broadcast(header: { row.0[$0] }, body: row.1)
        #expect(refusal?.reason == row.2)
        if let refusal { #expect(refusal.status == (row.2 == "PayloadTooLarge" ? 413 : 400)) }
    }

    static let channelIDs: [(String, Bool)] = [
        (channel, true), ("AAAA", true), ("AA==", true), ("A+/a", true),
        ("", false), ("AAA", false), ("A=AA", false), ("A===", false), ("AA-_", false), ("AA A", false),
        (String(repeating: "A", count: 128), true), (String(repeating: "A", count: 132), false),
    ]

    @Test("a channel id is standard base64, padded, of a bounded length", arguments: channelIDs)
    func channelID(_ row: (String, Bool)) {
        #expect(APNsChannelID.isWellFormed(row.0) == row.1)
    }

    /// (create body, the policy read, or the refusal's reason).
    static let creates: [(String, Int?, String?)] = [
        (#"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#, 0, nil),
        (#"{"push-type":"LiveActivity","message-storage-policy":1}"#, 1, nil),
        ("", nil, "BadRequestPayload"),
        ("[]", nil, "BadRequestPayload"),
        (#"{"message-storage-policy": 1, "push-type": "LiveActivity", "name": "x"}"#, nil, "BadRequestParams"),
        (#"{"message-storage-policy": 1}"#, nil, "MissingPushType"),
        (#"{"message-storage-policy": 1, "push-type": 1}"#, nil, "MissingPushType"),
        (#"{"message-storage-policy": 1, "push-type": "liveactivity"}"#, nil, "InvalidPushType"),
        (#"{"push-type": "LiveActivity"}"#, nil, "MissingChannelQueueSize"),
        (#"{"message-storage-policy": 2, "push-type": "LiveActivity"}"#, nil, "MissingChannelQueueSize"),
        (#"{"message-storage-policy": "1", "push-type": "LiveActivity"}"#, nil, "MissingChannelQueueSize"),
    ]

    @Test("a create's body", arguments: creates)
    func create(_ row: (String, Int?, String?)) {
        do {
            let settings = try APNsChannelSettings(body: Array(row.0.utf8))
            #expect(settings.messageStoragePolicy == row.1)
            #expect(row.2 == nil)
        } catch {
            #expect(error.reason == row.2)
            #expect(error.status == 400)
        }
    }

    @Test("a channel's settings read back as APNs writes them")
    func settingsJSON() {
        #expect(String(decoding: APNsChannelSettings(messageStoragePolicy: 0).json, as: UTF8.self)
            == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
    }

    static let routes: [(String, APNsBroadcastCall?, String?)] = [
        ("/4/broadcasts/apps/com.example.app", .broadcast, "com.example.app"),
        ("/1/apps/com.example.app/channels", .channels, "com.example.app"),
        ("/1/apps/com.example.app/all-channels", .allChannels, "com.example.app"),
        ("/4/broadcasts/apps/", nil, nil), ("/1/apps/channels", nil, nil), ("/1/apps/a/b/all-channels", nil, nil),
        ("/3/device/abcd", nil, nil), ("/1/apps/x/channels/y", nil, nil),
    ]

    @Test("the broadcast API's paths", arguments: routes)
    func route(_ row: (String, APNsBroadcastCall?, String?)) {
        let routed = APNsBroadcastCall.route(row.0[...])
        #expect(routed?.0 == row.1)
        #expect(routed?.1 == row.2)
    }

    @Test("the reasons' statuses: TopicMismatch 403, the others 400")
    func statuses() {
        for reason in APNsBroadcastReason.allCases {
            #expect(APNsBroadcastRefusal(reason).status == (reason == .topicMismatch ? 403 : 400))
            #expect(String(decoding: APNsBroadcastRefusal(reason).body, as: UTF8.self) == "{\"reason\":\"\(reason.rawValue)\"}")
        }
    }
}
