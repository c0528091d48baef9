#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share, reached only through `withLock`, behind a
/// pthread mutex: the project's one lock type.
///
/// Why not `Synchronization.Mutex`: on Linux (Swift 6.3.1) its contended
/// lock waits in `_MutexHandle._lockSlow`, a futex loop inside the
/// uninstrumented `libswiftSynchronization.so`. ThreadSanitizer never saw
/// that acquire, so it reports every value a `Mutex` protects as racing
/// the first time two threads meet on it, and each such value would need
/// a suppression in `scripts/sanitizers/tsan.supp`. TSan intercepts
/// `pthread_mutex_lock`/`unlock`, so it sees every acquire and release of
/// this lock and its reports on shared state mean a real race
/// (RELIABILITY.md §2). Uncontended, glibc's mutex is one atomic
/// compare-and-swap each way, as `Mutex` is.
///
/// A class, so the mutex has the stable address pthreads requires; the
/// `pthread_mutex_t` lives in its own allocation that the instance owns.
public final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // A default mutex: no attributes can fail here, and EINVAL/ENOMEM
        // from glibc's init do not exist for it; a failure is a broken libc.
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock. `body` must not
    /// call `withLock` on the same instance (the mutex is not recursive).
    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
