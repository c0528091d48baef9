import APNsCore

/// One notification in a pool, from `send` to its completion: what to send,
/// who waits for the answer, and what the pool and the connection keep about
/// it on the way (where it is, its answer deadline, how often APNs handed it
/// back, the answer so far). Owned by the pool; a connection holds it while
/// its stream is open.
final class PooledNotification {
    enum Phase: Equatable {
        /// Waiting in the pool (never handed to a session, or handed back).
        case queued
        /// Handed to the session of `connection` as `streamID`.
        case inFlight(APNsPoolMachine.ConnectionID, streamID: Int32)
        case finished
    }

    let notification: APNsNotification
    /// Who waits for the result, as they passed it (no wrapping closure on
    /// the relay's path, which would be one more allocation per notification).
    private let completion: (APNsDelivery) -> Void
    var phase: Phase = .queued
    /// When the answer timeout fires (`EventLoop.now` scale), measured from `send`.
    var answerDeadline: UInt64 = 0
    /// Position in the pool's `AnswerDeadlines` while tracked there.
    var deadlineSequence: UInt64?
    /// Response so far.
    var status: Int?
    var responseAPNsID: String?
    var body: [UInt8] = []
    /// An error answer's `Retry-After`, in seconds.
    var retryAfterSeconds: Int?
    /// The provider token the request carried (token auth), for `tokenRejected`.
    var tokenIssuedAt: Int?
    /// Times it was sent again: handed back unprocessed (GOAWAY,
    /// REFUSED_STREAM, never written), or answered with what another attempt
    /// mends (`APNsPoolMachine.requestFinished`).
    var resendCount = 0
    /// Sent again after 429 TooManyProviderTokenUpdates (that is done once).
    var resentForTokenUpdates = false
    /// The completion is decided (set once, before it runs).
    var isCompleted = false
    /// Where, in the bytes this connection handed to OpenSSL, the request's
    /// frames can start at the earliest (nil: not yet serialized). When the
    /// connection dies with fewer bytes written, APNs never saw the request.
    var earliestWireOffset: UInt64?

    init(notification: APNsNotification, completion: @escaping (APNsDelivery) -> Void) {
        self.notification = notification
        self.completion = completion
    }

    /// Forgets the answer of an attempt that is sent again, so the next
    /// answer is read on its own.
    func forgetAnswer() {
        status = nil
        responseAPNsID = nil
        retryAfterSeconds = nil
        body.removeAll()
    }

    func complete(_ delivery: APNsDelivery) {
        completion(delivery)
    }

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }
}
