// One decoded gorush notification to what goes to APNs: the
// payload and apns-* headers gorush (`GetIOSNotification`,
// notify/notification_apns.go) and apns2 (`setHeaders`, client.go) would
// send, and the failures that must not reach APNs, as gorush log entries.

import APNsCore
import HTTPCore
import RelayCore

/// What to send to APNs for one notification, once per token.
public struct ProviderPush: Sendable, Equatable {
    /// Even-length hex of 64–200 digits, as the sender wrote them (the logs
    /// echo them so).
    public var tokens: [String]
    /// The same tokens lowercased, as they go to APNs (`deviceToken(fromHex:)`,
    /// the relay's one token rule), in the same order.
    public var deviceTokens: [String]
    /// The notification's `topic`; nil when it has none. The caller picks
    /// the app by it (or by `app`) and sends that app's topic with the push
    /// type's suffix (`apnsTopic(appTopic:pushType:)`): the topic gorush
    /// sends, when it is the one APNs takes.
    public var topic: String?
    /// `topic` less the suffix Apple's header table appends to an app's
    /// bundle id for a push type (`.push-type.liveactivity`, `.voip`, …),
    /// when it ends with one (`apnsBundleID(ofTopic:)`): the topic of the
    /// app to pick when none has `topic` itself. nil otherwise.
    public var bundleID: String?
    /// Our extension field: the app's id, when the sender named one.
    public var app: String?
    /// `production`, else `development`, else production.
    public var environment: APNsEnvironment
    public var payload: [UInt8]
    /// `apns-push-type`'s value: the notification's `push_type`, else `alert`.
    public var pushType: String
    /// apns2's headers for the notification, lowercase, in apns2's order —
    /// `apns-id`, `apns-collapse-id`, `apns-priority`, `apns-expiration`
    /// only when given; `apns-push-type` always (`alert` unless given) —
    /// and never `apns-topic`.
    public var headers: [HTTPField]
}

/// A notification mapped: what goes to APNs (nil when nothing does) and
/// the entries for what failed before APNs (one per token).
public struct ProviderMapping: Sendable, Equatable {
    public var push: ProviderPush?
    public var failures: [FailedPushLog]
}

/// Maps one notification. Failures that never reach APNs, each a
/// `failed-push` entry without `status`:
/// - a platform other than 1 (2 is `mapGorushFCMNotification`'s): every
///   token, `gorushPlatformRefusal`'s words;
/// - no tokens: one entry with an empty token, gorush's message;
/// - a `data.aps` while other fields also fill `aps` (gorush panics there),
///   a header value with a control character, a payload over 4096 bytes
///   (`error` `PayloadTooLarge`, as APNs would answer): every token;
/// - a token that is not even-length hex of 64–200 digits: that token,
///   `error` `BadDeviceToken` (as APNs would answer); the others are sent.
public func mapGorushNotification(_ n: ProviderNotification) -> ProviderMapping {
    func failAll(_ error: String, reason: APNsReason? = nil) -> ProviderMapping {
        let tokens = n.tokens.isEmpty ? [""] : n.tokens
        return ProviderMapping(push: nil, failures: tokens.map {
            FailedPushLog(notificationID: n.id, platform: gorushPlatformName(n.platform), token: $0,
                          message: n.message, error: error, reason: reason?.rawValue, app: n.app)
        })
    }
    guard n.platform == 1 else { return failAll(gorushPlatformRefusal(n.platform)) }
    // gorush's CheckMessage wording.
    guard !n.tokens.isEmpty else { return failAll("please provide at least one device token") }
    if n.data.contains(where: { $0.name == "aps" }) && gorushTouchesAPSAfterData(n) {
        return failAll("data must not hold \"aps\" when other fields (title, alert, category, Live Activity …) fill it")
    }
    for (name, value) in [("apns_id", n.apnsID), ("collapse_id", n.collapseID), ("push_type", n.pushType)]
    where value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
        return failAll("\(name) cannot hold a control character: it is sent as a header")
    }
    let payload = gorushPayload(for: n)
    if payload.count > apnsMaxPayloadBytes {
        return failAll(APNsReason.payloadTooLarge.rawValue, reason: .payloadTooLarge)
    }

    var tokens: [String] = []
    var deviceTokens: [String] = []
    var failures: [FailedPushLog] = []
    for token in n.tokens {
        if let normalized = deviceToken(fromHex: token) {
            tokens.append(token)
            deviceTokens.append(normalized)
        } else {
            failures.append(FailedPushLog(notificationID: n.id, token: token, message: n.message,
                                          error: APNsReason.badDeviceToken.rawValue,
                                          reason: APNsReason.badDeviceToken.rawValue, app: n.app))
        }
    }
    guard !tokens.isEmpty else { return ProviderMapping(push: nil, failures: failures) }
    let environment: APNsEnvironment = n.production ? .production : n.development ? .development : .production
    let push = ProviderPush(tokens: tokens, deviceTokens: deviceTokens, topic: n.topic.isEmpty ? nil : n.topic,
                            bundleID: apnsBundleID(ofTopic: n.topic), app: n.app,
                            environment: environment, payload: payload, pushType: gorushPushType(of: n),
                            headers: gorushHeaders(for: n))
    return ProviderMapping(push: push, failures: failures)
}

/// apns2's `setHeaders` without `apns-topic` (and Content-Type, which is
/// the transport's): gorush sets `Priority` only for `normal` and `high`,
/// `Expiration` only when given, and apns2 writes it only when after the
/// epoch.
func gorushHeaders(for n: ProviderNotification) -> [HTTPField] {
    var headers: [HTTPField] = []
    if !n.apnsID.isEmpty { headers.append(HTTPField(name: "apns-id", value: n.apnsID)) }
    if !n.collapseID.isEmpty { headers.append(HTTPField(name: "apns-collapse-id", value: n.collapseID)) }
    switch n.priority {
    case "normal": headers.append(HTTPField(name: "apns-priority", value: "5"))
    case "high": headers.append(HTTPField(name: "apns-priority", value: "10"))
    default: break
    }
    if let expiration = n.expiration, expiration > 0 {
        headers.append(HTTPField(name: "apns-expiration", value: String(expiration)))
    }
    headers.append(HTTPField(name: "apns-push-type", value: gorushPushType(of: n)))
    return headers
}

/// apns2 sends `alert` when gorush's `push_type` is empty.
func gorushPushType(of n: ProviderNotification) -> String {
    n.pushType.isEmpty ? "alert" : n.pushType
}

/// Why a notification of `platform` is not sent: Huawei's Push Kit
/// (platform 3) is not served, and gorush knows no other platform.
public func gorushPlatformRefusal(_ platform: Int) -> String {
    platform == 3
        ? "platform 3 (Huawei Push Kit) is not served: this relay sends to APNs (platform 1) and FCM (platform 2)"
        : "platform \(platform) is not supported: this relay sends to APNs (platform 1) and FCM (platform 2)"
}
