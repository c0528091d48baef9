import HTTP2

/// One request in a pool, from `send` to its completion: what the pool and
/// the connection keep about it on the way (where it is, its answer
/// deadline, how often it was sent again, the answer so far). Owned by the
/// pool; a connection holds it while its stream is open.
///
/// A service subclasses it (APNs' `PooledNotification`): the request's
/// frames (`submit`), the answer's fields it keeps (`readResponseFields`),
/// what an error answer leads to (`policy(afterAnswer:)`) and who waits
/// for the answer (`complete`) are its overrides. The pool calls one
/// method per step, so no closure wraps the caller's completion (one more
/// allocation per request on the relay's path).
///
/// Confined to its pool's loop and touched by one event at a time, so its
/// stored state skips the dynamic exclusivity checks
/// (`@exclusivity(unchecked)`), as the pool's and the connection's do:
/// for public properties the compiler cannot prove it itself. Measured with
/// callgrind: the checks cost about 740 instructions per notification on
/// the provider path.
open class PooledRequest {
    public enum Phase: Equatable {
        /// Waiting in the pool (never handed to a session, or handed back).
        case queued
        /// Handed to the session of `connection` as `streamID`.
        case inFlight(HTTP2PoolMachine.ConnectionID, streamID: Int32)
        case finished
    }

    /// The size of the request's body: whether a connection's flow-control
    /// window has room for it (`HTTP2Connection.canTake`).
    public let bodyByteCount: Int
    @exclusivity(unchecked) public var phase: Phase = .queued
    /// When the answer timeout fires (`EventLoop.now` scale), measured from `send`.
    @exclusivity(unchecked) public var answerDeadline: UInt64 = 0
    /// Position in the pool's `AnswerDeadlines` while tracked there.
    @exclusivity(unchecked) var deadlineSequence: UInt64?
    /// Response so far: its status and a bounded prefix of its body.
    @exclusivity(unchecked) public var status: Int?
    @exclusivity(unchecked) public var body: [UInt8] = []
    /// Names the credential the request's `authorization` carried
    /// (`RequestAuthorizer.authorization`), for the answer policy; nil when
    /// the endpoint authorizes by certificate.
    @exclusivity(unchecked) public var authorizationStamp: Int?
    /// Times it was sent again: handed back unprocessed (GOAWAY,
    /// REFUSED_STREAM, never written), or answered with what another attempt
    /// mends (`policy(afterAnswer:)`).
    @exclusivity(unchecked) public var resendCount = 0
    /// The completion is decided (set once, before it runs).
    @exclusivity(unchecked) public var isCompleted = false
    /// Where, in the bytes this connection handed to OpenSSL, the request's
    /// frames can start at the earliest (nil: not yet serialized). When the
    /// connection dies with fewer bytes written, the server never saw the request.
    @exclusivity(unchecked) var earliestWireOffset: UInt64?

    /// How much of the answer's body is kept; the rest is read and dropped.
    public let maxAnswerBodyBytes: Int

    /// Error bodies are a few dozen bytes (APNs) to a few hundred (FCM):
    /// the default keeps a bounded prefix of 4 KiB.
    public init(bodyByteCount: Int, maxAnswerBodyBytes: Int = 4096) {
        self.bodyByteCount = bodyByteCount
        self.maxAnswerBodyBytes = maxAnswerBodyBytes
    }

    /// Hands the request to `session` as a new stream: its id.
    open func submit(on session: HTTP2ClientSession, authority: String,
                     authorization: String?) throws(HTTP2Error) -> Int32 {
        preconditionFailure("PooledRequest.submit: a subclass sends the request")
    }

    /// The answer's header fields arrived (`status` is set): keep what the
    /// service reads of them.
    open func readResponseFields(_ fields: HTTP2HeaderFields) {}

    /// An answer whose status is not 2xx arrived (`status` and `body` are
    /// set): whether another attempt mends it. Asked once per such answer.
    open func policy(afterAnswer status: Int) -> AnswerPolicy { .complete }

    /// Forgets the answer of an attempt that is sent again, so the next
    /// answer is read on its own.
    open func forgetAnswer() {
        status = nil
        body.removeAll()
    }

    /// The request ended: runs whoever waits. Called once, on the loop.
    open func complete(_ answer: PooledAnswer) {}

    public var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }
}
