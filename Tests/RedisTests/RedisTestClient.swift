import Dispatch
import EventLoop
import Locking
import Redis
import TestSupport

/// A `RedisConnection` on a loop thread of its own, driven from a test's
/// thread: commands go to the loop, results and events come back through
/// locks, and every wait is bounded.
final class RedisTestClient: @unchecked Sendable {
    typealias Outcome = Result<RedisValue, RedisError>

    let thread: EventLoopThread
    var loop: EventLoop { thread.loop }
    /// Touched on the loop thread only (hence `@unchecked Sendable`).
    private var connection: RedisConnection?
    private let recorded = Locked(Recorded())

    private struct Recorded {
        var events: [RedisConnectionEvent] = []
        /// Problems seen on the loop: a completion twice, or inside `send`.
        var violations: [String] = []
        var closed = false
    }

    /// Settings for tests: short timeouts and backoff.
    static func settings(commandTimeout: Duration = .seconds(10)) -> RedisConnectionSettings {
        var settings = RedisConnectionSettings()
        settings.connectTimeout = .seconds(2)
        settings.commandTimeout = commandTimeout
        settings.reconnectBase = .milliseconds(20)
        settings.reconnectCap = .milliseconds(200)
        return settings
    }

    init(url: RedisURL, settings: RedisConnectionSettings = RedisTestClient.settings()) throws {
        thread = try EventLoopThread(name: "redis-test")
        onLoop {
            let connection = RedisConnection(url: url, settings: settings, on: self.loop) { [recorded = self.recorded] event in
                recorded.withLock { $0.events.append(event) }
            }
            self.connection = connection
            connection.start()
        }
    }

    deinit {
        close()
    }

    /// Runs `body` on the loop thread and waits for it.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            result.withLock { $0 = body() }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    var events: [RedisConnectionEvent] { recorded.withLock { $0.events } }
    var violations: [String] { recorded.withLock { $0.violations } }
    var state: RedisConnectionState { onLoop { self.connection?.state ?? .closed } }

    /// Sends `commands` in one pass of the loop (pipelined) and waits for
    /// every completion; nil when not all came within `timeout`. The
    /// outcomes are in the order the completions ran, each with its index.
    func sendInOrder(_ commands: [RedisCommand], timeout: Duration = .seconds(30)) -> [(index: Int, outcome: Outcome)]? {
        let completions = Locked<[(index: Int, outcome: Outcome)]>([])
        let seen = Locked<Set<Int>>([])
        loop.execute {
            var insideSend = true
            for (index, command) in commands.enumerated() {
                insideSend = true
                self.connection?.send(command) { [recorded = self.recorded] outcome in
                    if insideSend { recorded.withLock { $0.violations.append("completion \(index) ran inside send") } }
                    if !seen.withLock({ $0.insert(index).inserted }) {
                        recorded.withLock { $0.violations.append("completion \(index) ran twice") }
                    }
                    completions.withLock { $0.append((index, outcome)) }
                }
                insideSend = false
            }
        }
        guard eventually(timeout: timeout, { completions.withLock { $0.count >= commands.count } }) else { return nil }
        return completions.withLock { $0 }
    }

    /// The outcomes of `commands`, by index; nil on timeout.
    func send(_ commands: [RedisCommand], timeout: Duration = .seconds(30)) -> [Outcome]? {
        guard let completed = sendInOrder(commands, timeout: timeout) else { return nil }
        var outcomes = [Outcome?](repeating: nil, count: commands.count)
        for (index, outcome) in completed { outcomes[index] = outcome }
        return outcomes.map { $0! }
    }

    /// One command's outcome; a timeout of the wait itself is a failure of
    /// the test's own making, `.timedOut("test")`.
    func run(_ arguments: String..., timeout: Duration = .seconds(30)) -> Outcome {
        send([RedisCommand(arguments.map { Array($0.utf8) })], timeout: timeout)?.first ?? .failure(.timedOut("test"))
    }

    func run(_ command: RedisCommand, timeout: Duration = .seconds(30)) -> Outcome {
        send([command], timeout: timeout)?.first ?? .failure(.timedOut("test"))
    }

    /// Waits until the connection reports `connected` at least `count` times.
    func waitUntilConnected(times count: Int = 1, timeout: Duration = .seconds(10)) -> Bool {
        eventually(timeout: timeout) { self.events.filter { $0 == .connected }.count >= count }
    }

    /// Closes the connection and ends the loop thread. Idempotent.
    func close() {
        guard recorded.withLock({ recorded -> Bool in
            defer { recorded.closed = true }
            return !recorded.closed
        }) else { return }
        onLoop {
            self.connection?.close()
            self.connection = nil
        }
        thread.stopAndJoin()
    }
}

extension Result where Success == RedisValue, Failure == RedisError {
    var value: RedisValue? { try? get() }
    var error: RedisError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
