import EventLoop
import Foundation
import Glibc
import Locking
import Testing

@Suite("A child process that dies with its parent")
struct ChildProcessTests {
    /// The child's exit status, or its signal as a negative number; nil
    /// while it runs past `timeout`.
    static func wait(_ pid: pid_t, timeout: Duration = .seconds(10)) -> Int32? {
        let deadline = EventLoop.deadline(after: timeout, from: EventLoop.monotonicNanoseconds())
        while EventLoop.monotonicNanoseconds() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                let signal = status & 0x7F
                return signal == 0 ? (status >> 8) & 0xFF : -signal
            }
            usleep(5_000)
        }
        return nil
    }

    /// A pipe whose ends close on exec, as the relay makes it.
    static func pipeEnds() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    static func readAll(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while case let count = read(descriptor, &chunk, chunk.count), count > 0 { bytes += chunk[..<count] }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("its standard output is the descriptor given, and its signal mask is empty though the parent's is not")
    func outputAndSignalMask() throws {
        let (readEnd, writeEnd) = try Self.pipeEnds()
        defer { close(readEnd) }
        // SigBlk: the blocked signals, in hex; the parent blocks SIGUSR2 here.
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGUSR2)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let pid = try spawnChildDyingWithParent(path: "/bin/sh", arguments: ["sh", "-c", "grep SigBlk /proc/self/status"],
                                                standardOutput: writeEnd, parentDeathSignal: SIGTERM)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        close(writeEnd)
        let output = Self.readAll(readEnd)
        #expect(Self.wait(pid) == 0)
        #expect(output.hasPrefix("SigBlk:") && output.dropFirst("SigBlk:".count).allSatisfy { "\t0\n".contains($0) },
                "\(output)")
    }

    @Test("it leads a process group of its own")
    func ownProcessGroup() throws {
        let (readEnd, writeEnd) = try Self.pipeEnds()
        defer { close(readEnd) }
        let pid = try spawnChildDyingWithParent(path: "/bin/sh", arguments: ["sh", "-c", "ps -o pgid= -p $$"],
                                                standardOutput: writeEnd, parentDeathSignal: SIGTERM)
        close(writeEnd)
        let group = Self.readAll(readEnd).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Self.wait(pid) == 0)
        #expect(group == String(pid))
    }

    @Test("it gets the signal when the thread that started it ends")
    func diesWithItsParentThread() throws {
        let started = Locked<pid_t?>(nil)
        let (readEnd, writeEnd) = try Self.pipeEnds()
        defer { close(readEnd) }
        let thread = Thread {
            // The thread ends only once the child has exec'd (its first
            // line), so after its prctl: a thread that ended before it
            // would leave the child no one to hear the death of, a race of
            // the test's making (the daemon spawns from its main thread).
            let pid = try? spawnChildDyingWithParent(path: "/bin/sh", arguments: ["sh", "-c", "echo ready; exec sleep 30"],
                                                     standardOutput: writeEnd, parentDeathSignal: SIGTERM)
            close(writeEnd)
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            started.withLock { $0 = pid }
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while started.withLock({ $0 }) == nil && Date() < deadline { usleep(5_000) }
        let pid = try #require(started.withLock { $0 })
        #expect(Self.wait(pid) == -SIGTERM)
    }

    @Test("a path that does not execute is exit status 127")
    func execFailure() throws {
        let pid = try spawnChildDyingWithParent(path: "/nonexistent/executable", arguments: ["executable"],
                                                standardOutput: STDERR_FILENO, parentDeathSignal: SIGTERM)
        #expect(Self.wait(pid) == 127)
    }
}
