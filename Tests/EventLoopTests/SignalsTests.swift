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
