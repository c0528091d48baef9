import Locking
import Observability
import Redis
import RelayCore

/// The lines a link's events deserve: one when it connects, one when a
/// connection is lost or the first attempt after one fails, then one a
/// minute while Redis stays unreachable (the backoff retries every few
/// seconds; a line each would bury the log). Never the password: the URL
/// is shown by `RedisURL.description`. A connect is an info line, the
/// rest are warnings.
public final class RedisLinkLog: Sendable {
    private struct State {
        var down = false
        var lastRepeat: ContinuousClock.Instant?
        var failuresSinceLine = 0
    }

    private let name: String
    private let url: RedisURL
    private let logger: Logger
    private let state = Locked(State())
    static let repeatInterval: Duration = .seconds(60)

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    public init(name: String, url: RedisURL, logger: Logger) {
        (self.name, self.url, self.logger) = (name, url, logger)
    }

    public func handle(_ event: RedisConnectionEvent, now: ContinuousClock.Instant = .now) {
        let line: (LogLevel, String)? = state.withLock { state in
            switch event {
            case .connected:
                let wasDown = state.down
                state = State()
                return (.info, "redis (\(name)): connected to \(url)" + (wasDown ? " again" : ""))
            case .connectFailed(let error, let retryIn), .lost(let error, let retryIn):
                if !state.down {
                    state.down = true
                    state.lastRepeat = now
                    state.failuresSinceLine = 0
                    return (.warning, "redis (\(name)): \(error); retrying in \(Self.milliseconds(retryIn)) ms, the relay goes on without it")
                }
                state.failuresSinceLine += 1
                if let last = state.lastRepeat, now - last < Self.repeatInterval { return nil }
                state.lastRepeat = now
                defer { state.failuresSinceLine = 0 }
                return (.warning, "redis (\(name)): still unreachable after \(state.failuresSinceLine) more attempts: \(error)")
            case .closed:
                return nil
            }
        }
        if let line { logger.log(line.0, line.1) }
    }
}
