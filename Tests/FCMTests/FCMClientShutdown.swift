import Dispatch
import EventLoop
import FCM

extension EventLoopThread {
    /// Shuts `client` down gracefully on this loop (bounded), then stops the
    /// loop; `client` lives until both are done. Its messages and token
    /// requests hold the client unowned, as they do in the daemon, where the
    /// client outlives them; a test must not let it go while its loop still
    /// finishes a connect or an answer.
    func stopAndJoin(after client: FCMClient, timeout: Double = 15) {
        withExtendedLifetime(client) {
            let done = DispatchSemaphore(value: 0)
            let transfer = UnsafeTransfer(client)
            loop.execute { transfer.value.shutdown { done.signal() } }
            _ = done.wait(timeout: .now() + timeout)
            stopAndJoin()
        }
    }
}
