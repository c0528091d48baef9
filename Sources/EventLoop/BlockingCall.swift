import Dispatch

extension EventLoop {
    /// Runs `body` on the loop thread and blocks the calling thread until it
    /// returns, handing back its value. On the loop's own thread it runs
    /// inline (waiting there would wait for itself). For start-up and
    /// shutdown steps outside any loop (binding listeners, flushing logs),
    /// never for the request path: the caller's thread sleeps meanwhile.
    public func runAndWait<Value>(_ body: @escaping () -> Value) -> Value {
        if isOnLoopThread { return body() }
        let handOff = BlockingHandOff(body)
        let done = DispatchSemaphore(value: 0)
        execute {
            handOff.result = handOff.body()
            done.signal()
        }
        done.wait()
        // The semaphore orders the loop thread's write before this read.
        return handOff.result!
    }
}

/// Carries the closure to the loop thread and its value back. Touched by one
/// thread at a time: the caller before `execute` and after the semaphore,
/// the loop thread in between.
private final class BlockingHandOff<Value>: @unchecked Sendable {
    let body: () -> Value
    var result: Value?
    init(_ body: @escaping () -> Value) { self.body = body }
}
