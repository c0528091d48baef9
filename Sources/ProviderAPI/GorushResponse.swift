// gorush's answers: `{"counts":N,"logs":[…],"success":"ok"}`
// (router/server.go, `pushHandler`), its `failed-push` log entries
// (logx/log.go, `LogPushEntry`) extended with what APNs said, and its
// error JSON (`abortWithError`). Keys in Go's order: gin writes a `gin.H`
// map with sorted keys, a struct in field order.

import JSON
import RelayCore

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

    /// The entry for a gorush notification's token that failed with
    /// `failure` (before APNs, or as `failedPushLog(for:…)` words a
    /// delivery): gorush's fields from the notification, no APNs answer.
    public init(notification: ProviderNotification, token: String, app: String?, failure: String) {
        self.init(notificationID: notification.id, platform: gorushPlatformName(notification.platform), token: token,
                  message: notification.message, error: failure, app: app)
    }

    /// The entry as JSON, on its own (the feedback hook's body).
    public var json: [UInt8] {
        var output: [UInt8] = []
        appendJSON(to: &output)
        return output
    }

    public func appendJSON(to output: inout [UInt8]) {
        var members: [(String, JSONValue)] = []
        if !notificationID.isEmpty { members.append(("notif_id", .string(notificationID))) }
        members.append(("type", .string("failed-push")))
        members.append(("platform", .string(platform)))
        members.append(("token", .string(token)))
        members.append(("message", .string(message)))
        members.append(("error", .string(error)))
        if let status { members.append(("status", .number(String(status)))) }
        if let reason { members.append(("reason", .string(reason))) }
        if let apnsID { members.append(("apns_id", .string(apnsID))) }
        if let app { members.append(("app", .string(app))) }
        if let timestamp { members.append(("timestamp", .number(String(timestamp)))) }
        appendJSONObject(members, to: &output)
    }
}

/// gorush's `typeForPlatForm` (logx/log.go).
func gorushPlatformName(_ platform: Int) -> String {
    switch platform {
    case 1: "ios"
    case 2: "android"
    case 3: "huawei"
    default: ""
    }
}

/// gorush's answer to `/api/push`: `{"counts":N,"logs":[…],"success":"ok"}`.
///
/// `counts` is gorush's `countNotificationTargets` summed over the
/// notifications of the platforms it sends to (`gorushCount(of:)`): each
/// notification's tokens, plus one when it has a `topic` — what was
/// attempted, not what succeeded; failures are in `logs`.
public func encodeGorushResponse(counts: Int, logs: [FailedPushLog]) -> [UInt8] {
    var output: [UInt8] = []
    output.append(contentsOf: #"{"counts":"#.utf8)
    output.append(contentsOf: String(counts).utf8)
    output.append(contentsOf: #","logs":["#.utf8)
    for (index, log) in logs.enumerated() {
        if index > 0 { output.append(UInt8(ascii: ",")) }
        log.appendJSON(to: &output)
    }
    output.append(contentsOf: #"],"success":"ok"}"#.utf8)
    return output
}

/// gorush's `counts` for a request (router/server.go,
/// `countNotificationTargets` over `filterEnabledNotifications`): for each
/// notification of platform 1 (the only one this relay sends), its tokens,
/// plus one when its `topic` is not empty. Other platforms count nothing,
/// as in a gorush with only iOS enabled.
public func gorushCount(of notifications: [ProviderNotification]) -> Int {
    notifications.reduce(0) { sum, n in
        n.platform == 1 ? sum + n.tokens.count + (n.topic.isEmpty ? 0 : 1) : sum
    }
}

/// gorush's error answer (`abortWithError`): `{"code":400,"message":"…"}`,
/// for a `ProviderRequestError` with status 400.
public func encodeGorushError(status: Int = 400, message: String) -> [UInt8] {
    var output: [UInt8] = []
    appendJSONObject([("code", JSONValue.number(String(status))), ("message", .string(message))], to: &output)
    return output
}
