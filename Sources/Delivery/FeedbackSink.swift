import APNsCore
import Feedback
import FeedbackHook
import Glibc
import ProviderAPI
import RelayCore

/// Where a failed push goes besides its answer: a dead token
/// (410, 400 BadDeviceToken / DeviceTokenNotForTopic) into the app's
/// feedback list, on every path; a failed-push log to FEEDBACK_HOOK_URL.
/// Shared by every loop; both calls are cheap and never wait.
public struct FeedbackSink: Sendable {
    public let store: FeedbackStore
    public let hook: FeedbackHook?
    /// With REDIS_URL: the fleet's lists in Redis, which `store` is then
    /// this instance's buffer for; a pull goes through it.
    public let shared: (any SharedFeedbackList)?
    /// With REDIS_URL and a hook: where failed-push logs go instead of the
    /// hook's own queue (Redis, from which any instance posts them).
    public let hookOutbox: (any HookOutbox)?

    public init(store: FeedbackStore, hook: FeedbackHook?, shared: (any SharedFeedbackList)? = nil,
                hookOutbox: (any HookOutbox)? = nil) {
        self.store = store
        self.hook = hook
        self.shared = shared
        self.hookOutbox = hookOutbox
    }

    /// Records the token when `delivery` says it is dead; returns whether it did.
    @discardableResult
    public func recordDeadToken(app: String, environment: APNsEnvironment, token: String, delivery: APNsDelivery) -> Bool {
        guard case .apns(let status, let reason, _) = delivery.outcome,
              let entry = FeedbackEntry(app: app, environment: environment, token: token, status: status,
                                        reason: reason, apnsTimestamp: delivery.unregisteredTimestamp,
                                        now: FeedbackSink.unixMilliseconds())
        else { return false }
        store.record(entry)
        return true
    }

    /// Hands `log` to the hook, when there is one (through the fleet's
    /// outbox, with one): a full queue drops it (counted), so a hook that
    /// is down never slows a notification.
    public func post(_ log: FailedPushLog) {
        guard let hook else { return }
        if let hookOutbox {
            hookOutbox.post(log.json)
        } else {
            _ = hook.enqueue(log.json)
        }
    }

    /// CLOCK_REALTIME in milliseconds: the time of a 400's entry.
    public static func unixMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

/// Where failed-push logs wait for the hook when several instances share
/// them (`FleetHookOutbox`): `post` never waits.
public protocol HookOutbox: Sendable {
    func post(_ body: [UInt8])
}
