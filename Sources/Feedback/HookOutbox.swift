/// Where failed-push logs wait for FEEDBACK_HOOK_URL: the hook's own
/// bounded queue (`FeedbackHook`, posted by its worker thread), or, when
/// several instances share them, the fleet's stream (`FleetHookOutbox`).
/// `post` never waits: past its bound a log is dropped and counted.
public protocol HookOutbox: Sendable {
    func post(_ body: [UInt8])
}
