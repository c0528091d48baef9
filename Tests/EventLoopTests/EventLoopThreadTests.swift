import EventLoop
import Glibc
import Locking
import Testing

@Suite("EventLoopThread")
struct EventLoopThreadTests {
    @Test("a group runs one loop per thread and hands them out round robin")
    func groupRoundRobin() async throws {
        let group = try EventLoopGroup(count: 3, namePrefix: "group-test")
        defer { group.stopAndJoin() }
        let loops = group.loops
        #expect(loops.count == 3)
        let picked = (0..<6).map { _ in group.next() }
        #expect(picked.map { ObjectIdentifier($0) } == (loops + loops).map { ObjectIdentifier($0) })

        let threads = Locked<[UInt]>([])
        for loop in loops {
            let done = Promise<Bool>()
            loop.execute {
                threads.withLock { $0.append(UInt(pthread_self())) }
                done.succeed(loop.isOnLoopThread)
            }
            loop.execute { loop.schedule(after: .seconds(10)) { done.timeOut() } }
            #expect(await done.wait() == true)
        }
        let ids = threads.withLock { $0 }
        #expect(Set(ids).count == 3)
        #expect(!ids.contains(UInt(pthread_self())))
    }

    @Test("the loop thread carries its name")
    func threadName() async throws {
        let thread = try EventLoopThread(name: "a-very-long-thread-name")
        defer { thread.stopAndJoin() }
        let done = Promise<String>()
        thread.loop.execute {
            // The kernel's view of this thread's name (what pthread_setname_np set).
            var name = [UInt8](repeating: 0, count: 32)
            let fd = open("/proc/thread-self/comm", O_RDONLY)
            let count = name.withUnsafeMutableBytes { read(fd, $0.baseAddress, 32) }
            close(fd)
            done.succeed(String(decoding: name.prefix(max(count, 0)).filter { $0 != 10 }, as: UTF8.self))
        }
        #expect(await done.wait() == "a-very-long-thr")
    }
}
