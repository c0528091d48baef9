// One notification of a gorush `/api/push` request, as decoded: gorush's
// `PushNotification` (notify/notification.go), the fields platform 1 uses,
// plus our extension `app`. Strings and numbers keep gorush's zero values
// ("" and 0 mean "not given"), because gorush's mapping tests them that
// way (`len(x) > 0`, `x > 0`); pointers in gorush are optionals here.

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
    public var action = ""
    public var actionLocKey = ""
    public var body = ""
    public var launchImage = ""
    public var locArgs: [String] = []
    public var locKey = ""
    public var title = ""
    public var subtitle = ""
    public var titleLocArgs: [String] = []
    public var titleLocKey = ""
    public var summaryArg = ""
    public var summaryArgCount = 0

    public init() {}
}

/// One element of `notifications`, with gorush's JSON names in the
/// comments where they differ from the property's.
public struct ProviderNotification: Sendable, Equatable {
    /// `notif_id`: echoed in the notification's log entries.
    public var id = ""
    public var tokens: [String] = []
    /// 1 iOS, 2 Android, 3 Huawei; this relay sends platform 1 only.
    public var platform = 0
    /// Our extension: the id of the configured app to send with.
    public var app: String?
    public var topic = ""
    public var message = ""
    public var title = ""
    /// `normal` (apns-priority 5) or `high` (10); anything else sends none.
    public var priority = ""
    /// `content_available`
    public var contentAvailable = false
    /// `mutable_content`
    public var mutableContent = false
    public var sound: ProviderSound?
    /// Custom top-level payload keys, in the sender's order.
    public var data: [JSONMember] = []
    public var retry = 0
    public var expiration: Int64?
    /// `apns_id`
    public var apnsID = ""
    /// `collapse_id`
    public var collapseID = ""
    /// `push_type`
    public var pushType = ""
    public var badge: Int?
    public var category = ""
    /// `thread-id`
    public var threadID = ""
    /// `url-args`
    public var urlArgs: [String] = []
    public var alert = ProviderAlert()
    public var production = false
    public var development = false
    /// `name`: the critical sound's name.
    public var soundName = ""
    /// `volume`: the critical sound's volume.
    public var soundVolume: Float = 0
    /// `interruption_level`
    public var interruptionLevel = ""
    /// `content-state` (Live Activity)
    public var contentState: [JSONMember] = []
    /// `stale-date`
    public var staleDate: Int64 = 0
    /// `dismissal-date`
    public var dismissalDate: Int64 = 0
    public var event = ""
    public var timestamp: Int64 = 0
    /// `attributes-type`
    public var attributesType = ""
    public var attributes: [JSONMember] = []
    /// `relevance-score`
    public var relevanceScore: Double?

    public init() {}
}
