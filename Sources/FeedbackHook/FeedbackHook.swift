// The feedback hook (gorush's `feedback_hook_url`): each failed
// log, as JSON, POSTed to the operator's URL from a bounded queue by one
// worker thread, with retries and backoff, so that no notification ever
// waits on it. gorush posts each log inline from its worker
// (notify/feedback.go, DispatchFeedback: one POST per log entry, the
// configured headers, a timeout); here the post leaves the event loop first.

import Foundation
import Observability
import Synchronization

/// The hook's counters, for metrics.
public struct FeedbackHookCounts: Sendable, Equatable {
    /// Bodies the hook answered 2xx.
    public var delivered: Int
    /// Posts tried again after a connect error, a timeout, a 5xx or a 429.
    public var retried: Int
    /// Bodies given up: another status (a 4xx but 429, a 3xx), the last
    /// attempt failing, or the post in flight when shutdown's time ran out.
    public var failed: Int
    /// Bodies never tried: the queue was full, the hook shutting down, or
    /// still queued when shutdown's time ran out.
    public var dropped: Int

    public init(delivered: Int = 0, retried: Int = 0, failed: Int = 0, dropped: Int = 0) {
        self.delivered = delivered
        self.retried = retried
        self.failed = failed
        self.dropped = dropped
    }
}

/// POSTs JSON bodies to one URL, one at a time on its own thread, reusing
/// its connection. `enqueue` is the only call the event loops make: it takes
/// a lock for a queue append and, only when the worker sleeps, wakes it.
public final class FeedbackHook: Sendable {
    public let url: FeedbackHookURL
    private let shared: HookShared
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - url: `FEEDBACK_HOOK_URL` (http or https; checked here too).
    ///   - headers: sent with every post (FEEDBACK_HOOK_HEADERS, read by `Configuration`).
    ///   - queueCapacity: bodies waiting at most; more are dropped.
    ///   - timeout: one post's limit, connect included (gorush's
    ///     `feedback_timeout`, 10 s there).
    ///   - maxAttempts: tries per body, the first included (1: no retry).
    ///   - backoff: the wait before the first retry, doubled for each next
    ///     one up to `maxBackoff`.
    ///   - logger: gets a warning on the worker thread per body given up
    ///     and one for the bodies still queued at shutdown's deadline (a
    ///     full queue's drops are only counted: they happen on the event
    ///     loops); lines name the URL by `url.loggable` only, never a body.
    public init(url: String, headers: [(name: String, value: String)], queueCapacity: Int,
                timeout: Duration, maxAttempts: Int, backoff: Duration,
                logger: Logger) throws(FeedbackHookError) {
        let parsedURL = try parseFeedbackHookURL(url)
        var checked: [(name: String, value: String)] = []
        for (index, header) in headers.enumerated() {
            checked.append(try checkedHeader(name: Array(header.name.utf8), value: Array(header.value.utf8),
                                             position: index + 1))
        }
        guard queueCapacity > 0 else { throw .invalidSetting("the queue capacity must be at least 1") }
        guard maxAttempts > 0 else { throw .invalidSetting("the attempts must be at least 1") }
        guard timeout > .zero else { throw .invalidSetting("the timeout must be more than 0") }
        guard backoff >= .zero else { throw .invalidSetting("the backoff must not be negative") }
        self.url = parsedURL
        // Content-Type as RFC 8259 §11 registers it (gorush adds a charset
        // parameter, which application/json does not define). An empty
        // Expect stops libcurl's `Expect: 100-continue` for bodies over 1 KiB,
        // which would cost a round trip, or a second with a server that
        // ignores it.
        let lines = ["Content-Type: application/json", "Expect:"] + checked.map { "\($0.name): \($0.value)" }
        let multi = try CurlMulti()
        let easy = try CurlEasy(url: url, headerLines: lines,
                                timeoutMilliseconds: milliseconds(timeout))
        shared = HookShared(multi: multi, queueCapacity: queueCapacity, logger: logger, loggableURL: parsedURL.loggable)
        let worker = HookWorker(shared: shared, easy: easy, retry: RetryPolicy(maxAttempts: maxAttempts, backoff: backoff))
        let finished = self.finished
        let thread = Thread {
            worker.run()
            finished.signal()
        }
        thread.name = "feedback-hook"
        thread.start()
    }

    /// A hook dropped without `shutdown` ends its worker at once (what is
    /// queued is dropped, a post in flight abandoned), so its thread and its
    /// curl handles do not outlive it.
    deinit {
        let now = ContinuousClock.now
        shared.state.withLock { state in
            state.stopping = true
            state.deadline = min(state.deadline ?? now, now)
        }
        shared.multi.wakeUp()
    }

    /// How one queued body's post ended.
    public enum PostOutcome: Equatable, Sendable {
        /// The hook answered 2xx.
        case delivered
        /// The hook refused it for good (a 4xx but 429, a 3xx): posting it
        /// again would get the same answer.
        case refused
        /// Not posted: every attempt failed in a way a later one might not
        /// (the hook down, 5xx, 429), or shutdown came first. A holder that
        /// can keep it (Redis) posts it again later.
        case notPosted
    }

    /// Told, on the worker thread, how a body's post ended.
    public typealias PostEnded = @Sendable (PostOutcome) -> Void

    /// Queues `body` for posting and returns at once; never waits on the
    /// network or the worker. false: not queued (the queue is full, or the
    /// hook is shutting down), counted as dropped, and `ended` is not
    /// called; else `ended` hears how the post ended, once.
    @discardableResult
    public func enqueue(_ body: [UInt8], ended: PostEnded? = nil) -> Bool {
        let (queued, wake) = shared.state.withLock { state -> (Bool, Bool) in
            guard !state.stopping, state.queue.count < shared.queueCapacity else { return (false, false) }
            state.queue.push(QueuedPost(body: body, ended: ended))
            // One wake-up per sleep: libcurl's wake-up is sticky, so the
            // worker sees it even if it arrives before the worker waits.
            let wake = state.workerIdle
            state.workerIdle = false
            return (true, wake)
        }
        if !queued { shared.dropped.add(1, ordering: .relaxed) }
        if wake { shared.multi.wakeUp() }
        return queued
    }

    /// The counters, readable from any thread.
    public var counts: FeedbackHookCounts {
        FeedbackHookCounts(delivered: shared.delivered.load(ordering: .relaxed),
                           retried: shared.retried.load(ordering: .relaxed),
                           failed: shared.failed.load(ordering: .relaxed),
                           dropped: shared.dropped.load(ordering: .relaxed))
    }

    /// Bodies waiting now (the one being posted not included).
    public var queued: Int { shared.state.withLock { $0.queue.count } }

    /// Stops taking bodies and posts what is queued until `within` has
    /// passed; then abandons the post in flight (failed) and what is still
    /// queued (dropped) and returns. Returns by the deadline whatever the
    /// server does; the worker thread ends on its own right after. A second
    /// call only waits again, up to its own deadline.
    public func shutdown(within: Duration) {
        // A day is more than any shutdown grace; the cap keeps the
        // arithmetic below from overflowing on an absurd argument.
        let deadline = ContinuousClock.now + min(within, .seconds(86_400))
        shared.state.withLock { state in
            state.stopping = true
            if state.deadline.map({ deadline < $0 }) ?? true { state.deadline = deadline }
        }
        shared.multi.wakeUp()
        let nanoseconds = max(0, milliseconds(deadline - ContinuousClock.now)) * 1_000_000
        if finished.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success {
            finished.signal()  // for a later call
        }
    }
}

/// Whole milliseconds of `duration`, clamped to Int.
func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    if overflow { return seconds < 0 ? Int.min : Int.max }
    return Int(clamping: product + attoseconds / 1_000_000_000_000_000)
}
