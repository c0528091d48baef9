// The hook's worker thread: takes bodies off the queue and posts them, with
// retries and exponential backoff, until shutdown. Every wait (for work, a
// backoff, a transfer) is a wait on libcurl's multi handle, which `enqueue`
// and `shutdown` can cut short from other threads.

import EventLoop
import Locking
import Observability
import Synchronization

/// What `enqueue`, `shutdown` and the worker share.
final class HookShared: Sendable {
    let multi: CurlMulti
    let queueCapacity: Int
    let logger: Logger
    let loggableURL: String
    let state = Locked(PostingState())
    let delivered = Atomic<Int>(0)
    let retried = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)

    init(multi: CurlMulti, queueCapacity: Int, logger: Logger, loggableURL: String) {
        self.multi = multi
        self.queueCapacity = queueCapacity
        self.logger = logger
        self.loggableURL = loggableURL
    }

    /// Whether the worker must stop now: shutdown's deadline has passed.
    func pastDeadline() -> Bool {
        guard let deadline = state.withLock({ $0.deadline }) else { return false }
        return ContinuousClock.now >= deadline
    }
}

struct PostingState {
    var queue = BodyQueue()
    /// The worker is waiting for work (or about to): the next enqueue wakes it.
    var workerIdle = false
    /// shutdown was called: take nothing more, post what is queued.
    var stopping = false
    /// shutdown's deadline: after it, nothing more is posted.
    var deadline: ContinuousClock.Instant?
}

/// One body waiting, and who hears how its post ended.
struct QueuedPost {
    var body: [UInt8]
    var ended: FeedbackHook.PostEnded?
}

/// A FIFO of bodies: an array and the index of its front, compacted when
/// the taken part is most of it, so push and pop are O(1) amortized.
struct BodyQueue {
    private var items: [QueuedPost] = []
    private var front = 0

    var count: Int { items.count - front }

    mutating func push(_ post: QueuedPost) { items.append(post) }

    mutating func pop() -> QueuedPost? {
        guard front < items.count else { return nil }
        let body = items[front]
        items[front] = QueuedPost(body: [], ended: nil)
        front += 1
        if front == items.count {
            items.removeAll(keepingCapacity: true)
            front = 0
        } else if front >= 64, front * 2 >= items.count {
            items.removeFirst(front)
            front = 0
        }
        return body
    }

    /// Empties the queue and hands back what it held.
    mutating func removeAll() -> [QueuedPost] {
        let removed = Array(items[front...])
        items.removeAll()
        front = 0
        return removed
    }
}

/// What the worker does with a post's result.
enum PostVerdict: Equatable {
    case delivered
    /// Worth another attempt: the hook may be restarting or overloaded.
    case retry
    /// Another attempt would get the same answer.
    case fail
}

/// 2xx delivered; a transport failure (connect error, timeout, reset), a 5xx
/// or a 429 (RFC 6585 §4: "too many requests", come back later) retried;
/// every other status (a 4xx, a 3xx: redirects are not followed, as they would
/// carry the headers elsewhere) failed at once. gorush counts only 200 as
/// success (DispatchFeedback); any 2xx is a server that took the body.
func postVerdict(for result: CurlPostResult) -> PostVerdict {
    switch result {
    case .answered(let status) where (200..<300).contains(status): .delivered
    case .answered(let status) where status == 429 || (500..<600).contains(status): .retry
    case .answered: .fail
    case .transportFailed: .retry
    case .aborted: .fail
    }
}

/// How often a body is tried and how long to wait between tries.
struct RetryPolicy {
    /// Tries per body, the first included.
    var maxAttempts: Int
    /// The wait before the first retry.
    var backoff: Duration

    /// The wait before attempt `attempt + 1` after `attempt` failed ones:
    /// `backoff` doubled for each earlier retry, at most `maxBackoff`. No
    /// jitter: one worker thread per relay posts the bodies in order, one at a time.
    func delay(afterAttempt attempt: Int) -> Duration {
        let backoff = Backoff(base: backoff.saturatingNanoseconds, cap: maxBackoff.saturatingNanoseconds)
        return .nanoseconds(backoff.ceiling(afterFailures: attempt))
    }
}

/// The longest wait between two attempts: a hook down for long must not hold
/// the queue for hours before its next attempt.
let maxBackoff = Duration.seconds(30)

/// The worker thread's loop. Owned by that thread alone (with the easy
/// handle), hence @unchecked Sendable: it is only handed to it.
final class HookWorker: @unchecked Sendable {
    private let shared: HookShared
    private let easy: CurlEasy
    private let retry: RetryPolicy
    /// How long one wait may last before the state is looked at again; the
    /// wake-ups make it shorter whenever something changes.
    private let idleWaitMilliseconds = 1000

    init(shared: HookShared, easy: CurlEasy, retry: RetryPolicy) {
        self.shared = shared
        self.easy = easy
        self.retry = retry
    }

    private enum Step {
        case post(QueuedPost)
        case wait
        case exit
    }

    func run() {
        while true {
            let step = shared.state.withLock { state -> Step in
                if let deadline = state.deadline, ContinuousClock.now >= deadline { return .exit }
                if let body = state.queue.pop() { return .post(body) }
                if state.stopping { return .exit }
                state.workerIdle = true
                return .wait
            }
            switch step {
            case .post(let post):
                // Posted first, then told: `ended?(deliver(…))` would skip
                // the post itself when no one listens.
                let outcome = deliver(post.body)
                post.ended?(outcome)
            case .wait: shared.multi.wait(milliseconds: idleWaitMilliseconds)
            case .exit:
                let abandoned = shared.state.withLock { $0.queue.removeAll() }
                if !abandoned.isEmpty {
                    shared.dropped.add(abandoned.count, ordering: .relaxed)
                    shared.logger.warning("feedback hook \(shared.loggableURL): \(abandoned.count) queued bodies dropped at shutdown")
                    for post in abandoned { post.ended?(.notPosted) }
                }
                return
            }
        }
    }

    /// Posts one body until it is delivered, failed, or shutdown's deadline
    /// passes.
    private func deliver(_ body: [UInt8]) -> FeedbackHook.PostOutcome {
        var attempt = 0
        while true {
            attempt += 1
            let result = shared.multi.post(body, on: easy, sliceMilliseconds: sliceMilliseconds,
                                           shouldAbort: shared.pastDeadline)
            switch postVerdict(for: result) {
            case .delivered:
                shared.delivered.add(1, ordering: .relaxed)
                return .delivered
            case .retry where attempt < retry.maxAttempts:
                guard pause(for: retry.delay(afterAttempt: attempt)) else {
                    giveUp(.aborted, attempts: attempt)
                    return .notPosted
                }
                shared.retried.add(1, ordering: .relaxed)
            case .retry:
                giveUp(result, attempts: attempt)
                return .notPosted
            case .fail:
                giveUp(result, attempts: attempt)
                return result == .aborted ? .notPosted : .refused
            }
        }
    }

    private func giveUp(_ result: CurlPostResult, attempts: Int) {
        shared.failed.add(1, ordering: .relaxed)
        let why = switch result {
        case .answered(let status): "HTTP \(status)"
        case .transportFailed(let text): text
        case .aborted: "shutdown's time ran out"
        }
        let tries = attempts == 1 ? "1 attempt" : "\(attempts) attempts"
        shared.logger.warning("feedback hook \(shared.loggableURL): a post failed after \(tries): \(why)")
    }

    /// Waits `delay` (a backoff); false when shutdown's deadline came first.
    private func pause(for delay: Duration) -> Bool {
        let end = ContinuousClock.now + delay
        while ContinuousClock.now < end {
            if shared.pastDeadline() { return false }
            shared.multi.wait(milliseconds: min(milliseconds(end - ContinuousClock.now) + 1, sliceMilliseconds()))
        }
        return !shared.pastDeadline()
    }

    /// One wait's length: at most a second, and never past shutdown's
    /// deadline.
    private func sliceMilliseconds() -> Int {
        guard let deadline = shared.state.withLock({ $0.deadline }) else { return idleWaitMilliseconds }
        return max(0, min(idleWaitMilliseconds, milliseconds(deadline - ContinuousClock.now) + 1))
    }
}
