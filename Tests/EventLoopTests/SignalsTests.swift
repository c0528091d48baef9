import EventLoop
import Glibc
import Testing

@Suite("Signals")
struct SignalsTests {
    @Test("a blocked signal sent to the loop thread arrives through the signalfd as a callback")
    func signalfdDelivery() async throws {
        let received = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<[Int32]>) in
                // Blocked on the loop thread only, and sent to that thread
                // only (pthread_kill), so no other thread of the test process
                // can ever take SIGUSR1's default action.
                try SignalSource.block([SIGUSR1])
                let seen = Recorder<Int32>()
                let source = try SignalSource(signals: [SIGUSR1], on: loop) { signal in
                    seen.items.append(signal)
                }
                #expect(pthread_kill(pthread_self(), SIGUSR1) == 0)
                loop.schedule(after: .milliseconds(50)) {
                    source.cancel()
                    source.cancel()
                    promise.succeed(seen.items)
                }
            }
        }
        #expect(received == [SIGUSR1])
    }

    @Test("waiting for a blocked signal takes one sent to this thread, and times out when none comes")
    func waitForBlocked() async throws {
        let (taken, timedOut, waited) = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<(Int32?, Int32?, UInt64)>) in
                // On the loop thread only, as above: SIGUSR2 is blocked here
                // and sent to this thread alone.
                try SignalSource.block([SIGUSR2])
                #expect(pthread_kill(pthread_self(), SIGUSR2) == 0)
                let taken = waitForBlockedSignal([SIGUSR2], timeout: .seconds(5))
                let start = EventLoop.monotonicNanoseconds()
                let timedOut = waitForBlockedSignal([SIGUSR2], timeout: .milliseconds(30))
                promise.succeed((taken, timedOut, EventLoop.monotonicNanoseconds() - start))
            }
        }
        #expect(taken == SIGUSR2)
        #expect(timedOut == nil)
        #expect(waited >= 30_000_000)
    }

    @Test("ignoring SIGPIPE and raising the descriptor limit succeed")
    func processSetup() throws {
        ignoreSIGPIPE()
        let before = try raiseFileDescriptorLimit()
        let after = try raiseFileDescriptorLimit()
        #expect(after == before)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        #expect(UInt64(limit.rlim_cur) == after)
        #expect(limit.rlim_cur == limit.rlim_max)
    }
}
