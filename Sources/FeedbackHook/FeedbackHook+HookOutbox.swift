import Feedback

/// Alone (no fleet), failed-push logs wait in the hook's own queue.
extension FeedbackHook: HookOutbox {
    public func post(_ body: [UInt8]) {
        enqueue(body)
    }
}
