import EventLoop
import Feedback
import HTTPCore

// The feedback pulls (`GET /api/feedback/<app>`, pyapns' `feedback`): the
// app's entries, taken and cleared. Without a fleet, from this instance's
// store, answered at once; with one (REDIS_URL), from the fleet's list in
// Redis, answered later on this loop, as a provision is.
extension ProviderAPIHandler {
    /// Takes `app`'s entries and answers with `answer(handler, entries,
    /// why Redis was not asked)`, which runs on this loop: now (its
    /// response returned) or later (handed to `completion`, nil returned).
    func takeFeedback(app: String, completion: @escaping (HTTP1Response) -> Void,
                      answer: @escaping @Sendable (ProviderAPIHandler, [FeedbackEntry], String?) -> HTTP1Response)
        -> HTTP1Response? {
        guard let shared = context.feedback.shared else {
            return answer(self, context.feedback.store.take(app: app), nil)
        }
        let hop = LoopHop(self, completion, loop: loop)
        shared.pull(app: app) { pull in
            let (entries, failure) = (pull.entries, pull.redisFailure)
            hop.run { handler, completion in completion(answer(handler, entries, failure)) }
        }
        return nil
    }
}
