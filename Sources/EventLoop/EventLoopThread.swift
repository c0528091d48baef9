import CEventLoop
import Dispatch
import Glibc
import Locking
import Synchronization

/// An `EventLoop` running on a thread of its own (a pthread, so it can be
/// joined). `init` returns once the loop is inside `run()`.
public final class EventLoopThread: Sendable {
    public let loop: EventLoop
    private let thread: Locked<pthread_t?>

    /// What the new thread needs; retained across `pthread_create`.
    private final class StartContext: Sendable {
        let loop: EventLoop
        let name: String
        init(loop: EventLoop, name: String) {
            self.loop = loop
            self.name = name
        }
    }

    /// Starts a loop thread. `name` (at most 15 bytes are kept, the kernel's
    /// limit) shows in `top -H` and debuggers.
    public init(name: String = "event-loop") throws(EventLoopError) {
        let loop = try EventLoop()
        self.loop = loop
        let running = DispatchSemaphore(value: 0)
        // Queued before the thread starts, so it runs in the first iteration.
        loop.execute { running.signal() }
        let context = Unmanaged.passRetained(StartContext(loop: loop, name: name))
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { argument in
            guard let argument else { return nil }
            let context = Unmanaged<StartContext>.fromOpaque(argument).takeRetainedValue()
            var name = Array(context.name.utf8.prefix(15))
            name.append(0)
            _ = name.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { pthread_setname_np(pthread_self(), $0.baseAddress!) }
            }
            context.loop.run()
            return nil
        }, context.toOpaque())
        guard result == 0 else {
            context.release()
            throw EventLoopError(.threadStart, errno: result)
        }
        self.thread = Locked(handle)
        running.wait()
    }

    /// Stops the loop and waits for its thread to end. Idempotent. Must not be
    /// called from the loop's own thread (it would wait for itself).
    public func stopAndJoin() {
        precondition(!loop.isOnLoopThread, "stopAndJoin() called on the loop's own thread")
        guard let handle = thread.withLock({ handle -> pthread_t? in
            defer { handle = nil }
            return handle
        }) else { return }
        loop.stop()
        pthread_join(handle, nil)
    }

    deinit {
        stopAndJoin()
    }
}

/// A fixed set of loop threads (one per core for the relay), handed out round
/// robin. Thread-safe.
public final class EventLoopGroup: Sendable {
    public let threads: [EventLoopThread]
    private let nextIndex = Atomic<Int>(0)

    /// Starts `count` loop threads (at least one) named `prefix-0`, `prefix-1`…
    public init(count: Int, namePrefix: String = "loop") throws(EventLoopError) {
        var threads: [EventLoopThread] = []
        for index in 0..<max(count, 1) {
            do {
                threads.append(try EventLoopThread(name: "\(namePrefix)-\(index)"))
            } catch {
                for started in threads { started.stopAndJoin() }
                throw error
            }
        }
        self.threads = threads
    }

    public var loops: [EventLoop] { threads.map(\.loop) }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return threads[Int(UInt(bitPattern: index) % UInt(threads.count))].loop
    }

    /// Stops every loop and joins every thread.
    public func stopAndJoin() {
        for thread in threads { thread.loop.stop() }
        for thread in threads { thread.stopAndJoin() }
    }
}
