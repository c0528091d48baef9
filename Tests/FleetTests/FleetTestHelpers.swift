import Dispatch
import Fleet
import Locking
import Redis

extension RedisLink {
    /// Sends `arguments` and waits (at most `timeout`) for the reply: the
    /// tests' synchronous form of `send`.
    func run(_ arguments: String..., timeout: Duration = .seconds(10)) -> Result<RedisValue, RedisError>? {
        run(arguments, timeout: timeout)
    }

    func run(_ arguments: [String], timeout: Duration = .seconds(10)) -> Result<RedisValue, RedisError>? {
        run(RedisCommand(arguments.map { Array($0.utf8) }), timeout: timeout)
    }

    func run(_ command: RedisCommand, timeout: Duration = .seconds(10)) -> Result<RedisValue, RedisError>? {
        let result = Locked<Result<RedisValue, RedisError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        send(command) { reply in
            result.withLock { $0 = reply }
            done.signal()
        }
        let (seconds, attoseconds) = timeout.components
        guard done.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) == .success
        else { return nil }
        return result.withLock { $0 }
    }
}

/// The lines a `RedisLinkLog` wrote, for checks.
final class CollectedLines: Sendable {
    private let lines = Locked<[(warning: Bool, line: String)]>([])
    var all: [(warning: Bool, line: String)] { lines.withLock { $0 } }
    var write: RedisLinkLog.Write { { warning, line in self.lines.withLock { $0.append((warning, line)) } } }
}
