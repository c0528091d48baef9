// The FCM fields of a gorush notification (platform 2), as decoded: what
// gorush v1.22's `PushNotification` (notify/notification.go) reads into
// firebase-admin-go's `messaging` types — `image`, `condition`,
// `notification` (messaging.Notification), `android`
// (messaging.AndroidConfig) and `fcm_options` — plus `collapse_key` and `time_to_live`, the
// fields gorush read before its FCM HTTP v1 client (v1.17 and older), which
// senders written for it still send, as its `notification`'s Android
// members. Zero values mean "not given", as in Go.

import JSON

/// FCM's `Notification`: the notification every platform shows.
public struct ProviderFCMNotification: Sendable, Equatable {
    /// `title`, `body`, `image` (a URL).
    public var title = "", body = "", image = ""
    /// The Android members gorush v1.17's `notification` had (`icon`,
    /// `color`, `sound`, `tag`, `click_action`, the loc keys and args,
    /// `android_channel_id`), which gorush's README still shows there:
    /// by AndroidNotification's names, sent in `android.notification`
    /// where that does not set them. gorush v1.22 drops them.
    public var androidMembers: [String: JSONValue] = [:]

    public init(title: String = "", body: String = "", image: String = "") {
        (self.title, self.body, self.image) = (title, body, image)
    }
}

/// FCM's `AndroidConfig`, the members gorush's client forwards.
public struct ProviderAndroidConfig: Sendable, Equatable {
    /// `collapse_key`, `priority` (`normal` or `high`), `restricted_package_name`.
    public var collapseKey = "", priority = "", restrictedPackageName = ""
    /// `ttl`, as firebase-admin-go reads it (`stringToDuration`): nanoseconds.
    public var ttlNanoseconds: Int64?
    /// `data`: strings only; FCM sends it instead of the message's `data`.
    public var data: [String: String]?
    /// `notification` (AndroidNotification): its members by JSON name, each
    /// of the kind `androidNotificationFields` gives, omitted when Go's
    /// encoder omits it.
    public var notification: [String: JSONValue]?
    /// `fcm_options.analytics_label`; nil when `fcm_options` is not given.
    public var analyticsLabel: String?
    /// `direct_boot_ok`, `bandwidth_constrained_ok`, `restricted_satellite_ok`.
    public var directBootOK = false, bandwidthConstrainedOK = false, restrictedSatelliteOK = false

    public init() {}
}

/// What a member of AndroidNotification may hold.
enum AndroidNotificationFieldKind: Equatable {
    case string, strings, flag
    /// `*int`: written when given, 0 included.
    case count
    /// A string firebase-admin-go reads into an enum: one of these, else
    /// its decoder fails.
    case oneOf([String])
}

/// AndroidNotification's members in the order firebase-admin-go's
/// `MarshalJSON` writes them (its converted fields first). `event_time`,
/// `vibrate_timings`, `proxy` and `light_settings` are not forwarded.
let androidNotificationFields: [(name: String, kind: AndroidNotificationFieldKind)] = [
    ("notification_priority", .oneOf(["PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_MAX"])),
    ("visibility", .oneOf(["PRIVATE", "PUBLIC", "SECRET"])),
    ("title", .string), ("body", .string), ("icon", .string), ("color", .string), ("sound", .string), ("tag", .string),
    ("click_action", .string), ("body_loc_key", .string), ("body_loc_args", .strings), ("title_loc_key", .string),
    ("title_loc_args", .strings), ("channel_id", .string), ("image", .string), ("ticker", .string), ("sticky", .flag),
    ("local_only", .flag), ("default_vibrate_timings", .flag), ("default_sound", .flag),
    ("default_light_settings", .flag), ("notification_count", .count),
]

/// The FCM fields of one notification.
public struct ProviderFCMFields: Sendable, Equatable {
    /// `image` (FCM's notification image), `condition` (a topic condition).
    public var image = "", condition = ""
    /// `notification`; nil when not given (Go's nil pointer).
    public var notification: ProviderFCMNotification?
    /// `android`; nil when not given.
    public var android: ProviderAndroidConfig?
    /// `fcm_options.analytics_label`; nil when `fcm_options` is not given.
    public var analyticsLabel: String?
    /// gorush v1.17's `collapse_key` and `time_to_live` (seconds), sent as
    /// `android.collapse_key` and `android.ttl` unless `android` sets them.
    public var collapseKey = "", timeToLive: Int64?

    public init() {}

    var isEmpty: Bool { self == ProviderFCMFields() }
}

/// Keeps the FCM fields out of line: a notification without them (every
/// platform 1 one) carries a nil reference, not their storage.
final class ProviderFCMFieldsStorage: Sendable, Equatable {
    let fields: ProviderFCMFields

    init(_ fields: ProviderFCMFields) { self.fields = fields }

    static func == (left: ProviderFCMFieldsStorage, right: ProviderFCMFieldsStorage) -> Bool {
        left.fields == right.fields
    }
}
