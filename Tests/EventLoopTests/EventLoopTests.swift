import EventLoop
import Glibc
import Locking
import TestSupport
import Testing

/// Records calls on the loop thread; read after the loop is done with it.
final class Recorder<Element>: @unchecked Sendable {
    var items: [Element] = []
}

@Suite("EventLoop")
struct EventLoopTests {
    @Test("timers fire in deadline order, ties in scheduling order, cancelled ones never")
    func timersFireInOrder() async throws {
        let order = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<[String]>) in
                let fired = Recorder<String>()
                loop.schedule(after: .milliseconds(30)) { fired.items.append("30ms") }
                loop.schedule(after: .milliseconds(10)) { fired.items.append("10ms-a") }
                let cancelled = loop.schedule(after: .milliseconds(15)) { fired.items.append("cancelled") }
                loop.schedule(after: .milliseconds(20)) { fired.items.append("20ms") }
                loop.schedule(after: .milliseconds(10)) { fired.items.append("10ms-b") }
                loop.schedule(after: .zero) { fired.items.append("0ms") }
                loop.cancel(cancelled)
                loop.cancel(cancelled)  // twice: harmless
                loop.schedule(after: .milliseconds(60)) { promise.succeed(fired.items) }
            }
        }
        #expect(order == ["0ms", "10ms-a", "10ms-b", "20ms", "30ms"])
    }

    @Test("a timer fires no earlier than its delay, measured from the loop's time")
    func timerHonoursDelay() async throws {
        let elapsed = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<UInt64>) in
                // A delay counts from `now`, the time the iteration began (as
                // nginx's timers do): under load a task can start well after
                // it, so the clock read here would be later than the delay's
                // origin.
                let start = loop.now
                loop.schedule(after: .milliseconds(25)) {
                    promise.succeed(EventLoop.monotonicNanoseconds() - start)
                }
            }
        }
        #expect(elapsed >= 25_000_000)
        #expect(elapsed < 2_000_000_000)
    }

    @Test("a timer scheduled inside a timer fires, and a zero-delay chain does not starve I/O")
    func timerInsideTimer() async throws {
        let result = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<(inner: Bool, chain: Int)>) in
                let innerFired = Recorder<Bool>()
                loop.schedule(after: .milliseconds(5)) {
                    loop.schedule(after: .milliseconds(5)) { innerFired.items.append(true) }
                }
                // A timer that reschedules itself with no delay runs once per
                // iteration; a task queued meanwhile still gets its turn.
                let chain = Recorder<Int>()
                chain.items = [0]
                func tick() {
                    chain.items[0] += 1
                    if chain.items[0] < 1000 { loop.schedule(after: .zero, tick) }
                }
                loop.schedule(after: .zero, tick)
                loop.execute {
                    // Runs while the chain is still going.
                    let chainAtExecute = chain.items[0]
                    loop.schedule(after: .milliseconds(40)) {
                        promise.succeed((innerFired.items == [true], chainAtExecute))
                    }
                }
            }
        }
        #expect(result.inner)
        #expect(result.chain < 1000)
    }

    @Test("fifty thousand timers with half cancelled fire in order and leave nothing behind")
    func manyTimers() async throws {
        let outcome = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<(ordered: Bool, fired: Int, cancelledFired: Int, pending: Int)>) in
                let deadlines = Recorder<UInt64>()
                let cancelledFired = Recorder<Int>()
                cancelledFired.items = [0]
                let baseline = loop.pendingTimerCount  // the test's own timeout
                var ids: [TimerID] = []
                let delays = patternBytes(count: 50_000, seed: 7)
                for (index, delay) in delays.enumerated() {
                    let deadline = loop.now + UInt64(delay) * 200_000  // up to ~51 ms
                    if index % 2 == 0 {
                        loop.schedule(atNanoseconds: deadline) { deadlines.items.append(deadline) }
                    } else {
                        ids.append(loop.schedule(atNanoseconds: deadline) { cancelledFired.items[0] += 1 })
                    }
                }
                for id in ids { loop.cancel(id) }
                loop.schedule(after: .milliseconds(200)) {
                    let ordered = zip(deadlines.items, deadlines.items.dropFirst()).allSatisfy { $0 <= $1 }
                    promise.succeed((ordered, deadlines.items.count, cancelledFired.items[0], loop.pendingTimerCount - baseline))
                }
            }
        }
        #expect(outcome.ordered)
        #expect(outcome.fired == 25_000)
        #expect(outcome.cancelledFired == 0)
        #expect(outcome.pending == 0)
    }

    @Test("execute from another thread runs on the loop thread, in order")
    func executeRunsOnLoopThread() async throws {
        try await withLoopThread { loop in
            #expect(!loop.isOnLoopThread)
            let results = Locked<[(Int, Bool)]>([])
            let done = Promise<Bool>()
            for index in 0..<100 {
                loop.execute {
                    results.withLock { $0.append((index, loop.isOnLoopThread)) }
                    if index == 99 { done.succeed(true) }
                }
            }
            loop.execute { loop.schedule(after: .seconds(10)) { done.timeOut() } }
            #expect(await done.wait() == true)
            let recorded = results.withLock { $0 }
            #expect(recorded.map(\.0) == Array(0..<100))
            #expect(recorded.allSatisfy { $0.1 })
        }
    }

    @Test("stop from another thread ends run, and a stop before run returns at once")
    func stopFromAnotherThread() async throws {
        let thread = try EventLoopThread(name: "stop-test")
        let ranTask = Promise<Bool>()
        thread.loop.execute { ranTask.succeed(true) }
        #expect(await ranTask.wait() == true)
        thread.stopAndJoin()  // would hang if stop were lost
        thread.stopAndJoin()  // idempotent

        let loop = try EventLoop()
        let timerFired = Recorder<Bool>()
        loop.schedule(after: .seconds(5)) {
            timerFired.items.append(true)
            loop.stop()
        }
        loop.stop()
        loop.run()
        #expect(timerFired.items.isEmpty)
    }

    @Test("deregistering another descriptor inside a handler drops its pending events, even when the number is reused")
    func deregisterSuppressesPendingEvents() async throws {
        let calls = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<[String]>) in
                let log = Recorder<String>()
                let (firstReader, firstWriter) = try makeSocketPair()
                let (secondReader, secondWriter) = try makeSocketPair()
                let keep = Recorder<AnyObject>()
                keep.items = [firstWriter, secondWriter]

                final class Handler: IOHandler {
                    let name: String
                    let action: (String) -> Void
                    init(_ name: String, _ action: @escaping (String) -> Void) {
                        self.name = name
                        self.action = action
                    }
                    func handleIO(_ events: IOEvents) { action(name) }
                }
                let sockets = ["first": firstReader, "second": secondReader]
                func onReady(_ name: String) {
                    log.items.append(name)
                    guard let mine = sockets[name], let other = sockets[name == "first" ? "second" : "first"] else { return }
                    loop.deregister(mine.fileDescriptor)
                    // Drop the other, then make its descriptor number refer to
                    // a fresh, empty socket (dup2 swaps it atomically, so no
                    // other thread can take the number in between) and register
                    // that: the batch's queued event for the number is stale.
                    loop.deregister(other.fileDescriptor)
                    guard let (fresh, freshPeer) = try? makeSocketPair(),
                          dup2(fresh.fileDescriptor, other.fileDescriptor) >= 0 else { return }
                    fresh.close()
                    keep.items.append(freshPeer)
                    log.items.append("replaced")
                    try? loop.register(other.fileDescriptor, interest: .readable, handler: Handler("stale") { log.items.append($0) })
                }
                // Both readable before the next epoll_wait: one batch holds both.
                _ = [UInt8(1)].withUnsafeBytes { firstWriter.write($0) }
                _ = [UInt8(1)].withUnsafeBytes { secondWriter.write($0) }
                try loop.register(firstReader.fileDescriptor, interest: .readable, handler: Handler("first", onReady))
                try loop.register(secondReader.fileDescriptor, interest: .readable, handler: Handler("second", onReady))
                loop.schedule(after: .milliseconds(50)) {
                    keep.items.append(firstReader)
                    keep.items.append(secondReader)
                    promise.succeed(log.items)
                }
            }
        }
        #expect(calls.count == 2)
        #expect(calls.first == "first" || calls.first == "second")
        #expect(calls.last == "replaced")
        #expect(!calls.contains("stale"))
    }

    @Test("a dropped interest is not delivered later in the same batch")
    func droppedInterestNotDelivered() async throws {
        let events = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<[IOEvents]>) in
                let (socket, peer) = try makeSocketPair()
                let seen = Recorder<IOEvents>()
                final class Handler: IOHandler {
                    let action: (IOEvents) -> Void
                    init(_ action: @escaping (IOEvents) -> Void) { self.action = action }
                    func handleIO(_ events: IOEvents) { action(events) }
                }
                _ = [UInt8(1)].withUnsafeBytes { peer.write($0) }
                try loop.register(socket.fileDescriptor, interest: [.readable, .writable], handler: Handler { events in
                    seen.items.append(events)
                    loop.setInterest(socket.fileDescriptor, [])
                })
                #expect(loop.interest(of: socket.fileDescriptor) == [.readable, .writable])
                loop.schedule(after: .milliseconds(30)) {
                    loop.deregister(socket.fileDescriptor)
                    #expect(loop.interest(of: socket.fileDescriptor) == nil)
                    _ = peer
                    promise.succeed(seen.items)
                }
            }
        }
        #expect(events == [[.readable, .writable]])
    }

    @Test("registering a descriptor twice is a typed error; a bad descriptor too")
    func registerErrors() async throws {
        let errors = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<[EventLoopError.Operation]>) in
                final class Idle: IOHandler { func handleIO(_ events: IOEvents) {} }
                let (socket, _) = try makeSocketPair()
                try loop.register(socket.fileDescriptor, interest: .readable, handler: Idle())
                var operations: [EventLoopError.Operation] = []
                do { try loop.register(socket.fileDescriptor, interest: .readable, handler: Idle()) } catch { operations.append((error as? EventLoopError)?.operation ?? .threadStart) }
                do { try loop.register(-1, interest: .readable, handler: Idle()) } catch { operations.append((error as? EventLoopError)?.operation ?? .threadStart) }
                #expect(loop.registeredCount == 1)
                loop.deregister(socket.fileDescriptor)
                #expect(loop.registeredCount == 0)
                promise.succeed(operations)
            }
        }
        #expect(errors == [EventLoopError.Operation.alreadyRegistered, .register])
    }
}
