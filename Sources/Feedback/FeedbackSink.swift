import Glibc
import RelayCore

/// Where a failed push goes besides its answer: a dead token
/// (410, 400 BadDeviceToken / DeviceTokenNotForTopic) into the app's
/// feedback list, on every path; a failed-push log to FEEDBACK_HOOK_URL.
/// Shared by every loop; both calls are cheap and never wait.
public struct FeedbackSink: Sendable {
    public let store: FeedbackStore
    /// Where failed-push logs go on their way to the hook: the hook's own
    /// queue (`FeedbackHook`), or with REDIS_URL the fleet's stream, from
    /// which any instance posts them (`FleetHookOutbox`); nil: no hook.
    public let hook: (any HookOutbox)?
    /// With REDIS_URL: the fleet's lists in Redis, which `store` is then
    /// this instance's buffer for; a pull goes through it.
    public let shared: (any SharedFeedbackList)?

    public init(store: FeedbackStore, hook: (any HookOutbox)?, shared: (any SharedFeedbackList)? = nil) {
        self.store = store
        self.hook = hook
        self.shared = shared
    }

    /// Records a dead token (the push service's answer decides which:
    /// `FeedbackEntry`'s APNs reading for APNs).
    public func record(_ deadToken: FeedbackEntry) {
        store.record(deadToken)
    }

    /// Hands `log` to the hook, when there is one: a full queue drops it
    /// (counted), so a hook that is down never slows a notification.
    public func post(_ log: FailedPushLog) {
        hook?.post(log.json)
    }

    /// CLOCK_REALTIME in milliseconds: the time of a 400's entry.
    public static func unixMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
