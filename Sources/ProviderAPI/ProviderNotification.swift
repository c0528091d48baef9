// One notification of a gorush `/api/push` request, as decoded: gorush's
// `PushNotification` (notify/notification.go), the fields platform 1 uses,
// the FCM ones platform 2 uses (ProviderFCMFields.swift), plus our
// extensions `app` and Apple's Live Activity `input-push-*` keys. Strings
// and numbers keep gorush's zero values ("" and 0 mean "not given"),
// because gorush's mapping tests them that way (`len(x) > 0`, `x > 0`);
// pointers in gorush are optionals here.

import JSON

/// The notification's `sound`: a name, or Apple's critical-alert
/// dictionary (gorush's `Sound`: `critical`, `name`, `volume`, each left
/// out of the payload when zero).
public enum ProviderSound: Sendable, Equatable {
    case name(String)
    case dictionary(critical: Int, name: String, volume: Float)
}

/// The notification's `alert`: gorush's `Alert` (Apple's alert dictionary,
/// with its subtitle).
public struct ProviderAlert: Sendable, Equatable {
    /// `title`, `subtitle`, `body`, `launch-image`, `action`, `summary-arg`.
    public var title = "", subtitle = "", body = "", launchImage = "", action = "", summaryArg = ""
    /// `title-loc-key`, `title-loc-args`, `loc-key`, `loc-args`, `action-loc-key`.
    public var titleLocKey = "", titleLocArgs: [String] = [], locKey = "", locArgs: [String] = [], actionLocKey = ""
    /// `summary-arg-count`
    public var summaryArgCount = 0

    public init() {}
}

/// One element of `notifications`. Properties are grouped; gorush's JSON
/// name follows each where it differs (`decodeGorushRequest` reads them).
public struct ProviderNotification: Sendable, Equatable {
    /// `notif_id` (echoed in log entries), `tokens`, `platform` (1 iOS, 2
    /// Android, 3 Huawei; this relay sends platforms 1 and 2), `retry`.
    public var id = "", tokens: [String] = [], platform = 0, retry = 0
    /// Our extension: the id of the configured app to send with.
    public var app: String?
    /// `topic`, `message`, `title`, `category`, `thread-id`, `url-args`.
    public var topic = "", message = "", title = "", category = "", threadID = "", urlArgs: [String] = []
    /// `priority`: `normal` (apns-priority 5) or `high` (10); anything else
    /// sends none. `expiration`, `apns_id`, `collapse_id`, `push_type`.
    public var priority = "", expiration: Int64?, apnsID = "", collapseID = "", pushType = ""
    /// `content_available`, `mutable_content`, `badge`, `interruption_level`,
    /// `relevance-score`.
    public var contentAvailable = false, mutableContent = false, badge: Int?, interruptionLevel = "",
               relevanceScore: Double?
    /// `sound`, and the critical sound's top-level `name` and `volume`.
    public var sound: ProviderSound?, soundName = "", soundVolume: Float = 0
    /// Apple's alert dictionary.
    public var alert = ProviderAlert()
    /// Custom top-level payload keys, in the sender's order.
    public var data: [JSONMember] = []
    /// Neither: production.
    public var production = false, development = false
    /// Live Activity: `event`, `timestamp`, `stale-date`, `dismissal-date`,
    /// `content-state`, `attributes-type`, `attributes`.
    public var event = "", timestamp: Int64 = 0, staleDate: Int64 = 0, dismissalDate: Int64 = 0,
               contentState: [JSONMember] = [], attributesType = "", attributes: [JSONMember] = []
    /// Our extension (gorush v1.22.0 has neither): a push-to-start's
    /// `input-push-token` (Apple's 1 asks for the started activity's update
    /// token) and `input-push-channel` (the broadcast channel it listens on).
    public var inputPushToken: Int64 = 0, inputPushChannel = ""
    /// FCM's fields (platform 2): `image`, `condition`, `notification`,
    /// `android`, `collapse_key`, `time_to_live`.
    public var fcm: ProviderFCMFields {
        get { fcmStorage?.fields ?? ProviderFCMFields() }
        set { fcmStorage = newValue.isEmpty ? nil : ProviderFCMFieldsStorage(newValue) }
    }
    var fcmStorage: ProviderFCMFieldsStorage?

    public init() {}
}
