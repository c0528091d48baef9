// The failed-push log: gorush's `failed-push` log entry (logx/log.go,
// `LogPushEntry`) extended with what the push service said. One value for
// two readers: the entries of gorush's `/api/push` answer (ProviderAPI) and
// the body the feedback hook posts, on every route (Feedback, Delivery).
// Here, below both, because ProviderAPI is a core without I/O and Feedback
// is not (its store's lock, the sink's clock); FeedbackHookHeader, the
// hook's other word a core needs, is in ConfigurationLists.swift.

import JSON

/// One `failed-push` entry of gorush's `logs`, also what the feedback hook
/// posts. gorush's fields (`notif_id` only when given, `type`, `platform`,
/// `token`, `message` — the notification's message, not an error —,
/// `error`), then ours, each left out when absent: `status` and `reason`
/// (APNs' answer), `apns_id`, `app` (the app it was sent for) and, for 410,
/// `timestamp` (APNs' milliseconds since the epoch).
///
/// `error` is what gorush writes there: APNs' reason when APNs refused the
/// notification (`BadDeviceToken`, …), otherwise a sentence.
public struct FailedPushLog: Sendable, Equatable {
    public var notificationID: String
    /// gorush's platform name: `ios`, `android`, `huawei`, or empty.
    public var platform: String
    public var token: String
    public var message: String
    public var error: String
    public var status: Int?
    public var reason: String?
    public var apnsID: String?
    public var app: String?
    public var timestamp: Int64?

    public init(notificationID: String = "", platform: String = "ios", token: String, message: String, error: String,
                status: Int? = nil, reason: String? = nil, apnsID: String? = nil, app: String? = nil,
                timestamp: Int64? = nil) {
        (self.notificationID, self.platform, self.token, self.message, self.error) =
            (notificationID, platform, token, message, error)
        (self.status, self.reason, self.apnsID, self.app, self.timestamp) = (status, reason, apnsID, app, timestamp)
    }

    /// The entry for a token that failed with `failure` (before the push
    /// service, or as a service's mapping words a delivery): the gorush
    /// notification's fields when it came in one, no service's answer.
    public init(notification: FailedPushSource.Notification?, token: String, app: String?, failure: String) {
        if let notification {
            self.init(notificationID: notification.id, platform: gorushPlatformName(notification.platform),
                      token: token, message: notification.message, error: failure, app: app)
        } else {
            self.init(token: token, message: "", error: failure, app: app)
        }
    }

    /// The entry as JSON, on its own (the feedback hook's body).
    public var json: [UInt8] {
        var output: [UInt8] = []
        appendJSON(to: &output)
        return output
    }

    /// `{"name":value,…}` in gorush's order, strings escaped by the one
    /// escaping (RFC 8259 §7).
    public func appendJSON(to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        var first = true
        func member(_ name: String, _ write: (inout [UInt8]) -> Void) {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            appendJSONString(name, to: &output)
            output.append(UInt8(ascii: ":"))
            write(&output)
        }
        func string(_ name: String, _ value: String) { member(name) { appendJSONString(value, to: &$0) } }
        func number(_ name: String, _ value: some BinaryInteger) { member(name) { $0.append(contentsOf: String(value).utf8) } }
        if !notificationID.isEmpty { string("notif_id", notificationID) }
        string("type", "failed-push")
        string("platform", platform)
        string("token", token)
        string("message", message)
        string("error", error)
        if let status { number("status", status) }
        if let reason { string("reason", reason) }
        if let apnsID { string("apns_id", apnsID) }
        if let app { string("app", app) }
        if let timestamp { number("timestamp", timestamp) }
        output.append(UInt8(ascii: "}"))
    }
}

/// gorush's `typeForPlatForm` (logx/log.go).
public func gorushPlatformName(_ platform: Int) -> String {
    switch platform {
    case 1: "ios"
    case 2: "android"
    case 3: "huawei"
    default: ""
    }
}

/// What a route's failed-push logs name besides the token: the gorush
/// notification the tokens came in, the `apns-id` the relay sent when it
/// chose one (the proxy). One per request or notification, shared by its
/// tokens' completions: a class, so each completion holds one reference.
public final class FailedPushSource: Sendable {
    /// A gorush notification's fields that its tokens' logs name.
    public struct Notification: Sendable, Equatable {
        /// `notif_id`.
        public var id: String
        /// gorush's number (1 iOS, 2 Android, 3 Huawei).
        public var platform: Int
        public var message: String

        public init(id: String, platform: Int, message: String) {
            (self.id, self.platform, self.message) = (id, platform, message)
        }
    }

    /// Nil on the routes without a gorush notification (the proxy, pyapns,
    /// Web Push): their logs' message is empty, their platform `ios`.
    public let notification: Notification?
    public let sentAPNsID: String?

    public init(notification: Notification? = nil, sentAPNsID: String? = nil) {
        (self.notification, self.sentAPNsID) = (notification, sentAPNsID)
    }
}
