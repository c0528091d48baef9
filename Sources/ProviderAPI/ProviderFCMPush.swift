// One decoded gorush notification of platform 2 to what goes to FCM: the
// HTTP v1 bodies gorush's FCM path (notify/notification_fcm.go, v1.22.0)
// would send, one per token and, for a `topic` or `condition`, one more
// (gorush sends that once, not per token), and the failures that must not
// reach FCM, as gorush log entries. The checks are gorush's `CheckMessage`
// and firebase-admin-go's `validateMessage`, which in gorush fail every
// message of the notification before any is sent; and FCM's own limits.

import FCMCore
import JSON
import RelayCore

/// One token's message.
public struct ProviderFCMMessage: Sendable, Equatable {
    public var token: FCMToken
    /// `{"message":{…,"token":"<token>"}}`.
    public var body: [UInt8]
}

/// The message to a topic or a condition: gorush's `IsTopic`.
public struct ProviderFCMTopicMessage: Sendable, Equatable {
    /// What gorush's log names as the token: the `condition` when given,
    /// else the `topic`.
    public var target: String
    /// `{"message":{"topic":…,…}}` or `{"message":{…,"condition":…}}`.
    public var body: [UInt8]
}

/// What to send to FCM for one notification.
public struct ProviderFCMPush: Sendable, Equatable {
    /// Our extension: the app's id, when the sender named one; else the
    /// default app (a platform 2 `topic` is FCM's, not an app's).
    public var app: String?
    /// One per token of valid syntax, in the sender's order.
    public var messages: [ProviderFCMMessage]
    public var topicMessage: ProviderFCMTopicMessage?
}

/// A platform 2 notification mapped: what goes to FCM (nil when nothing
/// does) and the entries for what failed before FCM.
public struct ProviderFCMMapping: Sendable, Equatable {
    public var push: ProviderFCMPush?
    public var failures: [FailedPushLog]
}

/// gorush's limit on tokens in one FCM notification (`CheckMessage`,
/// FCM's multicast limit).
public let gorushFCMMaxTokens = 500

/// Maps one platform 2 notification. Failures that never reach FCM, each
/// a `failed-push` entry with `platform` `android` and no `status`:
/// - neither tokens nor a topic or condition: one entry with an empty
///   token, gorush's message;
/// - over 500 tokens, a topic with a condition, a malformed topic, an
///   `android.priority` other than `normal`/`high`, a negative or over four
///   weeks `android.ttl`, a color not `#RRGGBB`, loc args without their
///   key, an image that is no URL, data over FCM's 4096 bytes: every
///   token (and the topic or condition);
/// - a token FCM could never take (`FCMToken`'s syntax): that token,
///   `reason` `INVALID_ARGUMENT`; the others are sent.
public func mapGorushFCMNotification(_ n: ProviderNotification) -> ProviderFCMMapping {
    let fields = n.fcm
    let target = fields.condition.isEmpty ? n.topic : fields.condition
    func entry(_ token: String, _ error: String, reason: String? = nil) -> FailedPushLog {
        FailedPushLog(notificationID: n.id, platform: gorushPlatformName(2), token: token, message: n.message,
                      error: error, reason: reason, app: n.app)
    }
    func failAll(_ error: String) -> ProviderFCMMapping {
        let targets = (target.isEmpty ? [] : [target]) + n.tokens
        return ProviderFCMMapping(push: nil, failures: (targets.isEmpty ? [""] : targets).map { entry($0, error) })
    }
    let message = GorushFCMMessage(n)
    if let refusal = gorushFCMRefusal(n, message) { return failAll(refusal) }

    let shared = message.sharedMembers()
    var messages: [ProviderFCMMessage] = []
    var failures: [FailedPushLog] = []
    messages.reserveCapacity(n.tokens.count)
    for token in n.tokens {
        if let valid = FCMToken(token) {
            messages.append(ProviderFCMMessage(token: valid, body: fcmTokenMessageBody(shared: shared, token: valid)))
        } else {
            failures.append(entry(token, "The registration token is not a valid FCM registration token",
                                  reason: FCMReason.invalidArgument.text))
        }
    }
    let topicMessage = target.isEmpty ? nil : ProviderFCMTopicMessage(
        target: target, body: fcmTopicMessageBody(shared: shared, topic: n.topic, condition: fields.condition))
    guard !messages.isEmpty || topicMessage != nil else { return ProviderFCMMapping(push: nil, failures: failures) }
    return ProviderFCMMapping(push: ProviderFCMPush(app: n.app, messages: messages, topicMessage: topicMessage),
                              failures: failures)
}

/// Why no message of the notification may go, in the order gorush and
/// firebase-admin-go check; nil when they may.
func gorushFCMRefusal(_ n: ProviderNotification, _ message: GorushFCMMessage) -> String? {
    let fields = n.fcm
    let isTopic = !n.topic.isEmpty || !fields.condition.isEmpty
    // gorush's CheckMessage.
    if !isTopic && n.tokens.isEmpty { return "please provide at least one device token" }
    if n.tokens.count > gorushFCMMaxTokens {
        return "you can specify up to \(gorushFCMMaxTokens) device registration tokens per invocation"
    }
    // firebase-admin-go's validateMessage (messaging_utils.go).
    if !n.topic.isEmpty && !fields.condition.isEmpty {
        return "exactly one of fid, token, topic or condition must be specified"
    }
    if !n.topic.isEmpty {
        let bare = n.topic.hasPrefix("/topics/") ? n.topic.dropFirst("/topics/".count) : Substring(n.topic)
        if bare.isEmpty || !bare.utf8.allSatisfy(isTopicNameByte) { return "malformed topic name" }
    }
    if let image = message.notification?.image, !image.isEmpty, !isRequestURI(image) {
        return "invalid image URL: \(quotedForMessage(image))"
    }
    if let android = message.android {
        if let ttl = android.ttlNanoseconds {
            if ttl < 0 { return "ttl duration must not be negative" }
            // FCM refuses a longer one (INVALID_ARGUMENT); gorush v1.17's words.
            if ttl > Int64(FCMMessageLimits.maxTTLSeconds) * 1_000_000_000 {
                return "the message's TimeToLive field must be an integer between 0 and \(FCMMessageLimits.maxTTLSeconds) (4 weeks)"
            }
        }
        if !android.priority.isEmpty && android.priority != "normal" && android.priority != "high" {
            return "priority must be 'normal' or 'high'"
        }
        if let notification = android.notification {
            if case .string(let color)? = notification["color"], !isHexColor(color) {
                return "color must be in the #RRGGBB form"
            }
            if notification["title_loc_args"] != nil && notification["title_loc_key"] == nil {
                return "titleLocKey is required when specifying titleLocArgs"
            }
            if notification["body_loc_args"] != nil && notification["body_loc_key"] == nil {
                return "bodyLocKey is required when specifying bodyLocArgs"
            }
            if case .string(let image)? = notification["image"], !isRequestURI(image) {
                return "invalid image URL: \(quotedForMessage(image))"
            }
        }
    }
    // FCM's limit on the data's keys and values (FCMMessageLimits).
    for data in [message.data, message.android?.data] {
        let size = data?.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } ?? 0
        if size > FCMMessageLimits.maxDataBytes {
            return "data of \(size) bytes is over FCM's limit of \(FCMMessageLimits.maxDataBytes) bytes"
        }
    }
    return nil
}

/// `[a-zA-Z0-9-_.~%]`, firebase-admin-go's topic name characters.
private func isTopicNameByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
         UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"): true
    default: false
    }
}

/// `#RRGGBB`.
private func isHexColor(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    return bytes.count == 7 && bytes[0] == UInt8(ascii: "#") && bytes.dropFirst().allSatisfy { byte in
        switch byte | 0x20 {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): true
        default: false
        }
    }
}

/// What Go's `url.ParseRequestURI` takes, near enough for an image: an
/// absolute URL (`scheme:` first, RFC 3986 §3.1) or an absolute path, and
/// no control character or space.
private func isRequestURI(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    guard !bytes.isEmpty, !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return false }
    if bytes[0] == UInt8(ascii: "/") { return true }
    guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isSchemeLetter(bytes[0]) else { return false }
    return bytes[1..<colon].allSatisfy { isSchemeLetter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
        || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
}

private func isSchemeLetter(_ byte: UInt8) -> Bool {
    let lower = byte | 0x20
    return lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")
}
