/// Where failed-push logs wait for FEEDBACK_HOOK_URL: the hook's own
/// bounded queue (`FeedbackHook`, posted by its worker thread), or, when
/// several instances share them, the fleet's stream (`FleetHookOutbox`).
/// `post` never waits: past its bound a log is dropped and counted.
/// Class-bound: the sink is copied into every delivery's completion, and a
/// class-bound existential copies as one retain.
public protocol HookOutbox: AnyObject, Sendable {
    func post(_ body: [UInt8])
}
