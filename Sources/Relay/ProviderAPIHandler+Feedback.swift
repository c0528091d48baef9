import EventLoop
import Feedback
import HTTP1

// The feedback pulls (`GET /api/feedback/<app>`, pyapns' `feedback`): the
// app's entries, taken and cleared. Without a fleet, from this instance's
// store, answered at once; with one (REDIS_URL), from the fleet's list in
// Redis, answered later on this loop, as an asynchronous push is.
extension ProviderAPIHandler {
    /// Takes `app`'s entries and answers with `answer(handler, entries,
    /// why Redis was not asked)`, which runs on this loop: now (its
    /// response returned) or later (handed to `completion`, nil returned).
    func takeFeedback(app: String, completion: @escaping (HTTP1Response) -> Void,
                      answer: @escaping (ProviderAPIHandler, [FeedbackEntry], String?) -> HTTP1Response)
        -> HTTP1Response? {
        guard let shared = context.feedback.shared, let loop else {
            return answer(self, context.feedback.store.take(app: app), nil)
        }
        let waiting = WaitingPull(handler: self, completion: completion, answer: answer)
        shared.pull(app: app) { pull in
            loop.execute { waiting.answer(pull) }
        }
        return nil
    }
}

/// A pull's handler and connection callback, carried to the link's thread
/// and back: only the handler's loop runs `answer`, where both belong.
private struct WaitingPull: @unchecked Sendable {
    let handler: ProviderAPIHandler
    let completion: (HTTP1Response) -> Void
    let respond: (ProviderAPIHandler, [FeedbackEntry], String?) -> HTTP1Response

    init(handler: ProviderAPIHandler, completion: @escaping (HTTP1Response) -> Void,
         answer: @escaping (ProviderAPIHandler, [FeedbackEntry], String?) -> HTTP1Response) {
        (self.handler, self.completion, self.respond) = (handler, completion, answer)
    }

    func answer(_ pull: FeedbackPull) {
        completion(respond(handler, pull.entries, pull.redisFailure))
    }
}
