import CEventLoop
import Glibc
import Locking
import Synchronization

/// What a registered file descriptor is ready for (or what went wrong with it).
///
/// `hangup` and `error` are always reported, whatever the interest: epoll
/// cannot mask them. The loop is level-triggered, so a handler that receives
/// either must deregister (or stop interest and close) the descriptor, or it
/// is told again on the next iteration.
public struct IOEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let readable = IOEvents(rawValue: 1 << 0)
    public static let writable = IOEvents(rawValue: 1 << 1)
    public static let hangup = IOEvents(rawValue: 1 << 2)
    public static let error = IOEvents(rawValue: 1 << 3)
}

/// Receives readiness for one registered descriptor, on the loop's thread.
public protocol IOHandler: AnyObject {
    func handleIO(_ events: IOEvents)
}

/// Errors of the loop itself (epoll, eventfd, signalfd, threads).
public struct EventLoopError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Operation: String, Sendable {
        case epollCreate, eventfdCreate, register, alreadyRegistered
        case threadStart, signalMask, signalfdCreate, resourceLimit
    }
    public let operation: Operation
    /// The `errno` of the failing call (0 when there was no system call).
    public let errno: Int32

    public init(_ operation: Operation, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        errno == 0 ? "event loop: \(operation.rawValue) failed"
            : "event loop: \(operation.rawValue) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Identifies a scheduled timer; stale ids (fired or cancelled) are harmless.
public struct TimerID: Hashable, Sendable {
    fileprivate let slot: UInt32
    fileprivate let generation: UInt32
}

/// An epoll event loop: readiness of registered descriptors, timers, and a
/// cross-thread task queue, all on one thread.
///
/// Thread confinement: every method and property is for the loop's own thread
/// (the thread inside `run()`, or the creating thread before `run()` starts),
/// except `execute(_:)`, `stop()` and `isOnLoopThread`, which any thread may
/// call. That is what makes the `@unchecked Sendable` sound: the loop is
/// shared across threads only to reach those three.
///
/// One iteration, as nginx does it: wait in `epoll_wait` until the nearest
/// timer (or a wake-up), handle the ready descriptors, then run the expired
/// timers. Readiness is level-triggered: a handler that leaves data unread is
/// told again next iteration, so handlers may stop early for fairness.
public final class EventLoop: @unchecked Sendable {
    // MARK: descriptors

    private struct Registration {
        let handler: IOHandler
        let generation: UInt32
        var interest: IOEvents
    }

    private let epollFD: Int32
    private let wakeFD: Int32
    /// Indexed by file descriptor: O(1) dispatch for tens of thousands of fds.
    private var registrations: [Registration?] = []
    /// Bumped on every registration; carried in the epoll token so an event
    /// queued for a descriptor that was deregistered (and perhaps reused by a
    /// new registration) in the same batch is recognised as stale.
    private var nextGeneration: UInt32 = 1
    private static let wakeToken = UInt64.max
    private var events: UnsafeMutablePointer<epoll_event>
    private var eventCapacity: Int
    private static let maxEventCapacity = 8192

    // MARK: timers

    private struct HeapEntry {
        let deadline: UInt64
        let sequence: UInt64
        let slot: UInt32
        let generation: UInt32

        @inline(__always)
        func precedes(_ other: HeapEntry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    /// A timer's action, wrapped: a struct field holds the closure as it is,
    /// whereas an array of bare optional closures stores them at the generic
    /// (most abstract) representation, which costs a reabstraction thunk, a
    /// heap allocation, on every store and every load.
    private struct TimerAction {
        let run: () -> Void
    }

    private var heap: [HeapEntry] = []
    /// Timer actions live in slots; a slot's generation changes when its timer
    /// fires or is cancelled, which invalidates the heap entry lazily.
    private var timerActions: [TimerAction?] = []
    private var timerGenerations: [UInt32] = []
    private var freeTimerSlots: [UInt32] = []
    private var nextTimerSequence: UInt64 = 0
    private var staleHeapEntries = 0

    // MARK: cross-thread

    private struct PendingWork {
        var tasks: [@Sendable () -> Void] = []
        var wakeupWritten = false
    }

    private let pending = Locked(PendingWork())
    private let stopRequested = Atomic<Bool>(false)
    private let loopThread = Atomic<UInt>(0)

    /// Monotonic time (CLOCK_MONOTONIC) in nanoseconds, refreshed once per
    /// iteration after `epoll_wait` returns. Timers are relative to it.
    public private(set) var now: UInt64

    public init() throws(EventLoopError) {
        let epollFD = epoll_create1(shim_EPOLL_CLOEXEC())
        guard epollFD >= 0 else { throw EventLoopError(.epollCreate, errno: errno) }
        let wakeFD = eventfd(0, shim_EFD_NONBLOCK_CLOEXEC())
        guard wakeFD >= 0 else {
            let code = errno
            close(epollFD)
            throw EventLoopError(.eventfdCreate, errno: code)
        }
        var event = epoll_event()
        shim_epoll_event_set(&event, shim_EPOLLIN(), EventLoop.wakeToken)
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let code = errno
            close(wakeFD)
            close(epollFD)
            throw EventLoopError(.register, errno: code)
        }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.eventCapacity = 1024
        self.events = .allocate(capacity: 1024)
        self.now = EventLoop.monotonicNanoseconds()
    }

    deinit {
        events.deallocate()
        close(wakeFD)
        close(epollFD)
    }

    /// CLOCK_MONOTONIC in nanoseconds (uncached).
    public static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// True when called from the thread currently inside `run()`. Any thread.
    public var isOnLoopThread: Bool {
        loopThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    // MARK: registration

    /// Starts watching `fd`. The loop keeps `handler` strongly until
    /// `deregister`. The caller still owns `fd`: deregister before closing it.
    public func register(_ fd: Int32, interest: IOEvents, handler: IOHandler) throws(EventLoopError) {
        guard fd >= 0 else { throw EventLoopError(.register, errno: EBADF) }
        let index = Int(fd)
        let generation = nextGeneration
        nextGeneration = nextGeneration == UInt32.max ? 1 : nextGeneration + 1
        var event = epoll_event()
        shim_epoll_event_set(&event, EventLoop.epollMask(interest), EventLoop.token(fd: fd, generation: generation))
        if epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) != 0 {
            let code = errno
            throw EventLoopError(code == EEXIST ? .alreadyRegistered : .register, errno: code)
        }
        // A leftover entry here belonged to a descriptor that was closed
        // without deregistering (epoll dropped it on close, which is why the
        // ADD succeeded): the new registration replaces it.
        if index >= registrations.count {
            registrations.append(contentsOf: repeatElement(nil, count: max(index + 1 - registrations.count, registrations.count)))
        }
        if registrations[index] == nil { registeredCount += 1 }
        registrations[index] = Registration(handler: handler, generation: generation, interest: interest)
    }

    /// Changes what `fd` is watched for. Ignored for an unregistered `fd`.
    public func setInterest(_ fd: Int32, _ interest: IOEvents) {
        guard fd >= 0, Int(fd) < registrations.count, var registration = registrations[Int(fd)] else { return }
        guard registration.interest != interest else { return }
        var event = epoll_event()
        shim_epoll_event_set(&event, EventLoop.epollMask(interest), EventLoop.token(fd: fd, generation: registration.generation))
        // Fails only if the fd was closed while registered; deregister cleans up.
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
        registration.interest = interest
        registrations[Int(fd)] = registration
    }

    /// The interest `fd` is registered with, or nil when it is not registered.
    public func interest(of fd: Int32) -> IOEvents? {
        guard fd >= 0, Int(fd) < registrations.count else { return nil }
        return registrations[Int(fd)]?.interest
    }

    /// Stops watching `fd` and releases its handler. Safe inside any handler,
    /// also for another descriptor whose events are already in the current
    /// batch: those events are dropped. Call it before closing `fd`.
    public func deregister(_ fd: Int32) {
        guard fd >= 0, Int(fd) < registrations.count, registrations[Int(fd)] != nil else { return }
        registrations[Int(fd)] = nil
        registeredCount -= 1
        // ENOENT/EBADF when the fd was already closed: nothing left to remove.
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
    }

    /// Number of registered descriptors (the wake-up eventfd excluded).
    public private(set) var registeredCount = 0

    @inline(__always)
    private static func token(fd: Int32, generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }

    private static func epollMask(_ interest: IOEvents) -> UInt32 {
        // No EPOLLRDHUP: level-triggered, it would fire on every iteration
        // while a handler has paused reading; a half-close shows up as
        // `readable` followed by end-of-file instead.
        var mask: UInt32 = 0
        if interest.contains(.readable) { mask |= shim_EPOLLIN() }
        if interest.contains(.writable) { mask |= shim_EPOLLOUT() }
        return mask
    }

    // MARK: timers

    /// Runs `action` on the loop thread once `after` has elapsed (measured
    /// from `now`). Timers with the same deadline run in scheduling order.
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerID {
        schedule(atNanoseconds: EventLoop.deadline(after: delay, from: now), action)
    }

    /// Runs `action` once the monotonic clock reaches `deadline` (nanoseconds,
    /// the scale of `now`).
    @discardableResult
    public func schedule(atNanoseconds deadline: UInt64, _ action: @escaping () -> Void) -> TimerID {
        let slot: UInt32
        if let free = freeTimerSlots.popLast() {
            slot = free
            timerActions[Int(slot)] = TimerAction(run: action)
        } else {
            slot = UInt32(timerActions.count)
            timerActions.append(TimerAction(run: action))
            timerGenerations.append(0)
        }
        let generation = timerGenerations[Int(slot)]
        heapPush(HeapEntry(deadline: deadline, sequence: nextTimerSequence, slot: slot, generation: generation))
        nextTimerSequence &+= 1
        return TimerID(slot: slot, generation: generation)
    }

    /// Cancels a pending timer. A fired or already cancelled id is ignored.
    public func cancel(_ id: TimerID) {
        guard releaseTimerSlot(id.slot, generation: id.generation) != nil else { return }
        staleHeapEntries += 1
        // Lazy cancellation leaves the entry in the heap; rebuild when most of
        // the heap is dead so heavy schedule/cancel churn (a timeout per
        // request) keeps memory and the O(log n) depth bounded.
        if staleHeapEntries > 1024 && staleHeapEntries * 2 > heap.count {
            heap.removeAll { !isLive($0) }
            staleHeapEntries = 0
            heapify()
        }
    }

    /// Pending (not cancelled, not yet fired) timers.
    public var pendingTimerCount: Int { heap.count - staleHeapEntries }

    /// Frees the slot if `generation` is current; returns its action.
    private func releaseTimerSlot(_ slot: UInt32, generation: UInt32) -> TimerAction? {
        let index = Int(slot)
        guard index < timerGenerations.count, timerGenerations[index] == generation,
              let action = timerActions[index] else { return nil }
        timerActions[index] = nil
        timerGenerations[index] &+= 1
        freeTimerSlots.append(slot)
        return action
    }

    @inline(__always)
    private func isLive(_ entry: HeapEntry) -> Bool {
        timerGenerations[Int(entry.slot)] == entry.generation
    }


    private func heapPush(_ entry: HeapEntry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func heapPopFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(from: 0)
    }

    private func siftDown(from start: Int) {
        var parent = start
        let count = heap.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            var best = left
            let right = left + 1
            if right < count && heap[right].precedes(heap[left]) { best = right }
            guard heap[best].precedes(heap[parent]) else { return }
            heap.swapAt(best, parent)
            parent = best
        }
    }

    private func heapify() {
        guard heap.count > 1 else { return }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) {
            siftDown(from: index)
        }
    }

    /// Drops cancelled entries from the top so the wait time is exact.
    private func discardStaleTimersAtTop() {
        while let first = heap.first, !isLive(first) {
            heapPopFirst()
            staleHeapEntries -= 1
        }
    }

    private func runExpiredTimers() {
        // Timers scheduled while this pass runs wait for the next pass, even
        // with a zero delay, so a self-rescheduling timer cannot starve I/O.
        let sequenceLimit = nextTimerSequence
        while let first = heap.first, first.deadline <= now {
            if !isLive(first) {
                heapPopFirst()
                staleHeapEntries -= 1
                continue
            }
            guard first.sequence < sequenceLimit else { return }
            heapPopFirst()
            if let action = releaseTimerSlot(first.slot, generation: first.generation) {
                action.run()
            }
        }
    }

    // MARK: cross-thread

    /// Runs `task` on the loop thread at its next iteration. Any thread.
    /// Tasks still queued when the loop is destroyed are dropped.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let needsWakeup = pending.withLock { work -> Bool in
            work.tasks.append(task)
            if work.wakeupWritten { return false }
            work.wakeupWritten = true
            return true
        }
        if needsWakeup { wake() }
    }

    /// Makes `run()` return after the current iteration. Any thread. A stop
    /// requested before `run()` starts makes it return at once.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    private func wake() {
        var one: UInt64 = 1
        // EAGAIN means the counter is already non-zero: the loop wakes anyway.
        _ = withUnsafeBytes(of: &one) { Glibc.write(wakeFD, $0.baseAddress, 8) }
    }

    private func handleWakeup() {
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { Glibc.read(wakeFD, $0.baseAddress, 8) }
        var tasks: [@Sendable () -> Void] = []
        pending.withLock { work in
            work.wakeupWritten = false
            swap(&tasks, &work.tasks)
        }
        for task in tasks { task() }
    }

    // MARK: running

    /// Runs iterations on the calling thread until `stop()`.
    public func run() {
        loopThread.store(UInt(pthread_self()), ordering: .relaxed)
        defer { loopThread.store(0, ordering: .relaxed) }
        while !stopRequested.load(ordering: .acquiring) {
            runOnce()
        }
        stopRequested.store(false, ordering: .relaxed)
    }

    /// One iteration: wait (at most until the nearest timer), dispatch ready
    /// descriptors, run expired timers.
    private func runOnce() {
        discardStaleTimersAtTop()
        var timeoutMilliseconds: Int32 = -1
        if let first = heap.first {
            let current = EventLoop.monotonicNanoseconds()
            if first.deadline <= current {
                timeoutMilliseconds = 0
            } else {
                // Round up: waking a little early would spin until the deadline.
                let milliseconds = (first.deadline - current + 999_999) / 1_000_000
                timeoutMilliseconds = Int32(clamping: milliseconds)
            }
        }
        let count = epoll_wait(epollFD, events, Int32(eventCapacity), timeoutMilliseconds)
        now = EventLoop.monotonicNanoseconds()
        if count > 0 {
            dispatch(count: Int(count))
            if Int(count) == eventCapacity && eventCapacity < EventLoop.maxEventCapacity {
                events.deallocate()
                eventCapacity *= 2
                events = .allocate(capacity: eventCapacity)
            }
        }
        // count < 0 is EINTR (a signal handler ran): just go round again.
        runExpiredTimers()
    }

    private func dispatch(count: Int) {
        for index in 0..<count {
            let event = events + index
            let token = shim_epoll_event_token(event)
            if token == EventLoop.wakeToken {
                handleWakeup()
                continue
            }
            let fd = Int(UInt32(truncatingIfNeeded: token))
            let generation = UInt32(truncatingIfNeeded: token >> 32)
            // Stale event: deregistered (or re-registered) earlier in this batch.
            guard fd < registrations.count, let registration = registrations[fd],
                  registration.generation == generation else { continue }
            let flags = shim_epoll_event_events(event)
            var ready = IOEvents()
            if flags & shim_EPOLLIN() != 0 { ready.insert(.readable) }
            if flags & shim_EPOLLOUT() != 0 { ready.insert(.writable) }
            // An interest dropped earlier in this batch must not be delivered.
            ready.formIntersection(registration.interest)
            if flags & shim_EPOLLHUP() != 0 { ready.insert(.hangup) }
            if flags & shim_EPOLLERR() != 0 { ready.insert(.error) }
            guard !ready.isEmpty else { continue }
            registration.handler.handleIO(ready)
        }
    }
}
