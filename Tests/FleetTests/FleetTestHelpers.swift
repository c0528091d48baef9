import Dispatch
import Fleet
import Locking
import Observability
import Redis
import TestSupport

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

extension LoggedLines {
    /// A logger that writes every level here.
    var logger: Logger { Logger(level: .debug, sink: sink) }
}
