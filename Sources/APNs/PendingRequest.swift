import RelayCore

/// One notification from `send` to its completion. Owned by the pool; a
/// connection holds it while its stream is open.
final class PendingRequest {
    enum Phase {
        /// Waiting in the pool's queue (never handed to a session).
        case queued
        /// Handed to a session as `streamID`.
        case inFlight(APNsConnection, Int32)
        case finished
    }

    /// Who waits for the result, in the form they asked for it (no wrapping
    /// closure, which would be one more allocation per notification).
    enum Completion {
        case delivery((APNsDelivery) -> Void)
        case outcome((DeliveryOutcome) -> Void)
    }

    let notification: APNsNotification
    let completion: Completion
    var phase: Phase = .queued
    /// When the answer timeout fires (`EventLoop.now` scale), measured from `send`.
    var answerDeadline: UInt64 = 0
    /// Position in the pool's `AnswerDeadlines` while tracked there.
    var deadlineSequence: UInt64?
    /// Response so far.
    var status: Int?
    var responseAPNsID: String?
    var body: [UInt8] = []
    /// The provider token the request carried (token auth), for `tokenRejected`.
    var tokenIssuedAt: Int?
    /// Times it was handed back unprocessed (GOAWAY, REFUSED_STREAM).
    var resendCount = 0
    /// The completion ran (set once, before it runs).
    var isCompleted = false
    /// Where, in the bytes this connection handed to OpenSSL, the request's
    /// frames can start at the earliest (nil: not yet serialized). When the
    /// connection dies with fewer bytes written, APNs never saw the request.
    var earliestWireOffset: UInt64?

    init(notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        self.notification = notification
        self.completion = .delivery(completion)
    }

    init(notification: APNsNotification, completion: Completion) {
        self.notification = notification
        self.completion = completion
    }

    func complete(_ delivery: APNsDelivery) {
        switch completion {
        case .delivery(let body): body(delivery)
        case .outcome(let body): body(delivery.outcome)
        }
    }

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }
}
