// gorush's answers: `{"counts":N,"logs":[…],"success":"ok"}`
// (router/server.go, `pushHandler`) with its `failed-push` log entries
// (RelayCore's `FailedPushLog`, shared with the feedback hook), and its
// error JSON (`abortWithError`). Keys in Go's order: gin writes a `gin.H`
// map with sorted keys, a struct in field order.

import JSON
import RelayCore

extension FailedPushLog {
    /// The entry for a gorush notification's token that failed with
    /// `failure` before APNs: gorush's fields from the notification.
    public init(notification: ProviderNotification, token: String, app: String?, failure: String) {
        self.init(notification: FailedPushSource.Notification(notification), token: token, app: app, failure: failure)
    }
}

extension FailedPushSource.Notification {
    /// What a gorush notification's failed-push logs name of it.
    public init(_ notification: ProviderNotification) {
        self.init(id: notification.id, platform: notification.platform, message: notification.message)
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
/// notification of platform 1, and of platform 2 where `countingFCM` says
/// the relay sends it (its app has FCM credentials: a gorush with Android
/// enabled), its tokens, plus one when its `topic` is not empty (a
/// `condition` adds none, as in gorush). Other platforms count nothing, as
/// in a gorush with them disabled.
public func gorushCount(of notifications: [ProviderNotification],
                        countingFCM: (ProviderNotification) -> Bool = { _ in false }) -> Int {
    notifications.reduce(0) { sum, n in
        n.platform == 1 || (n.platform == 2 && countingFCM(n)) ? sum + n.tokens.count + (n.topic.isEmpty ? 0 : 1) : sum
    }
}

/// gorush's error answer (`abortWithError`): `{"code":400,"message":"…"}`,
/// for a `ProviderRequestError` with status 400.
public func encodeGorushError(status: Int = 400, message: String) -> [UInt8] {
    var output: [UInt8] = []
    appendJSONObject([("code", JSONValue.number(String(status))), ("message", .string(message))], to: &output)
    return output
}
