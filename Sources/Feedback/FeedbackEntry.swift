// One token a push service refused for good (WIRE.md §4.6), and the one
// place that decides which APNs answers are feedback at all (FCM's: its
// `FCMVerdict.tokenDead`).

import APNsCore
import RelayCore

/// Which push service a feedback entry's token is of, by gorush's platform
/// names (`gorushPlatformName`).
public enum FeedbackPlatform: String, Sendable, Equatable {
    /// An APNs device token.
    case ios
    /// An FCM registration token.
    case android
}

/// A device token APNs said will never work again for an app's topic, or
/// a registration token FCM said so of, as the pull endpoint
/// (`GET /api/feedback/<app>`), pyapns' `feedback` call and the hook
/// report it.
public struct FeedbackEntry: Sendable, Equatable {
    /// The id of the app the push was for (the apps file's `id`).
    public var app: String
    /// APNs' environment; `.production` for FCM, which has one.
    public var environment: APNsEnvironment
    /// `.ios` unless the token is FCM's: the pull endpoint's JSON says
    /// `"platform":"android"` for those, and nothing for APNs' tokens (an
    /// APNs entry reads as it always has).
    public var platform: FeedbackPlatform = .ios
    /// The device token as sent to APNs (lower-case hex), or the FCM
    /// registration token as sent to FCM.
    public var token: String
    /// APNs' reason text (`Unregistered`, `ExpiredToken`, `BadDeviceToken`,
    /// `DeviceTokenNotForTopic`), or FCM's error code (`UNREGISTERED`,
    /// `SENDER_ID_MISMATCH`, `INVALID_ARGUMENT`).
    public var reason: String
    /// Unix time in milliseconds: APNs' `timestamp` for a 410 (when APNs
    /// last knew the token to be invalid), else the relay's clock when the
    /// answer came.
    public var time: Int64

    public init(app: String, environment: APNsEnvironment, platform: FeedbackPlatform = .ios, token: String,
                reason: String, time: Int64) {
        self.app = app
        self.environment = environment
        self.platform = platform
        self.token = token
        self.reason = reason
        self.time = time
    }

    /// The entry an APNs answer means, or nil when the answer is not
    /// feedback (`feedbackReason(status:reason:)`). `apnsTimestamp` is the
    /// 410 body's `timestamp`; `now` the relay's clock, in unix milliseconds,
    /// used for a 400 and for a 410 whose body had no timestamp.
    public init?(app: String, environment: APNsEnvironment, token: String,
                 status: Int, reason: APNsReason?, apnsTimestamp: Int64?, now: Int64) {
        guard let text = feedbackReason(status: status, reason: reason) else { return nil }
        let time = status == 410 ? (apnsTimestamp ?? now) : now
        self.init(app: app, environment: environment, token: token, reason: text, time: time)
    }
}

/// The reason text to record when an APNs answer says the token is dead,
/// nil for every other answer. Apple's "Handling notification responses from
/// APNs": 410 is "the device token is no longer active for the topic"
/// (`Unregistered`, `ExpiredToken`), whatever reason it carries; of the 400s
/// only `BadDeviceToken` (a malformed token, or one of the other
/// environment) and `DeviceTokenNotForTopic` say the token itself is wrong.
/// Everything else (the payload, the relay's credentials, APNs' load) says
/// nothing about the token, so a backend must not delete it — gorush posts
/// every failed log to its hook, but a feedback list is for deleting.
public func feedbackReason(status: Int, reason: APNsReason?) -> String? {
    switch (status, reason) {
    // A 410 without a body still means the token is gone; Apple names that
    // state Unregistered.
    case (410, let reason): return reason?.rawValue ?? APNsReason.unregistered.rawValue
    case (400, .badDeviceToken?), (400, .deviceTokenNotForTopic?): return reason?.rawValue
    default: return nil
    }
}

/// The same decision for a whole outcome: only an APNs answer can be feedback
/// (a timeout or a lost connection says nothing about the token).
public func feedbackReason(for outcome: DeliveryOutcome) -> String? {
    guard case .apns(let status, let reason, _) = outcome else { return nil }
    return feedbackReason(status: status, reason: reason)
}
