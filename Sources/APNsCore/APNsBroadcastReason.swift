// The words of APNs' broadcast API (Live Activity broadcasts and channel
// management): the reasons Apple's "Handling error responses from APNs"
// lists for it beyond the notification table's, the refusal both the relay
// and the emulator write, and what a channel id looks like.

/// A `reason` only APNs' broadcast API gives. The ones it shares with
/// notifications (BadPriority, PayloadTooLarge, …) are `APNsReason`'s.
public enum APNsBroadcastReason: String, Sendable, CaseIterable {
    /// The app's key or certificate has no broadcast capability.
    case featureNotEnabled = "FeatureNotEnabled"
    case missingChannelId = "MissingChannelId"
    /// Not base64, or longer than APNs allows.
    case badChannelId = "BadChannelId"
    /// No such channel for the bundle id in this environment.
    case channelNotRegistered = "ChannelNotRegistered"
    /// A channel's JSON has an attribute APNs does not know.
    case badRequestParams = "BadRequestParams"
    /// A channel's JSON cannot be parsed.
    case badRequestPayload = "BadRequestPayload"
    case missingPushType = "MissingPushType"
    /// The app has its 10,000 channels in this environment.
    case cannotCreateChannelConfig = "CannotCreateChannelConfig"
    /// The token's or certificate's bundle ids do not include the path's.
    case topicMismatch = "TopicMismatch"

    public var status: Int { self == .topicMismatch ? 403 : 400 }
}

/// An error answer of APNs' broadcast API: the status and the reason.
public struct APNsBroadcastRefusal: Error, Sendable, Hashable {
    public var status: Int
    public var reason: String

    public init(_ reason: APNsBroadcastReason) {
        (status, self.reason) = (reason.status, reason.rawValue)
    }

    public init(_ reason: APNsReason) {
        (status, self.reason) = (reason.documentedStatus ?? 400, reason.rawValue)
    }

    public init(status: Int, reason: String) {
        (self.status, self.reason) = (status, reason)
    }

    /// `{"reason":"…"}`: APNs' error body (the reasons are ASCII words).
    public var body: [UInt8] { Array("{\"reason\":\"\(reason)\"}".utf8) }
}

/// APNs' limits on a broadcast and its channels.
public enum APNsChannelID {
    /// Apple: an app keeps "up to 10,000 channels" per environment.
    public static let maximumChannelsPerApp = 10_000
    /// Apple gives no number for a channel id's "allowed length"; its ids
    /// are 24 base64 characters (16 bytes). Longer than this is surely not one.
    public static let maximumLength = 128
    /// A broadcast's payload: 5 KB (a device notification's is 4 KB).
    public static let maximumPayloadBytes = 5120

    /// Standard base64 with its padding (the form ActivityKit takes).
    public static func isWellFormed(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength, bytes.count % 4 == 0 else { return false }
        var padding = 0
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else { return false }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                return false
            }
        }
        return padding <= 2
    }
}
