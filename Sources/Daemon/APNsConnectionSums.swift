import APNs
import HTTP2Client
import Locking

/// Collects one snapshot of each loop's APNs client (connection states,
/// waiting notifications, counters, last failures) and hands back the sums
/// once every loop has answered.
final class APNsConnectionSums: Sendable {
    struct Sums: Sendable {
        var connections: [APNsConnectionState: Int] = [:]
        /// Notifications waiting for a stream (`APNsClientStatus.queued`).
        var queued = 0
        var counters = APNsCounters()
        /// A loop's last failures (any loop's: they carry no time to order
        /// them by).
        var lastConnectFailure: ConnectionFailure?
        var lastConnectionLoss: ConnectionFailure?
    }

    private let state: Locked<(answered: Int, total: Sums)>
    private let loops: Int

    init(loops: Int) {
        self.loops = loops
        state = Locked((0, Sums()))
    }

    func record(_ status: APNsClientStatus, loop: Int) -> Sums? {
        state.withLock { state in
            state.answered += 1
            state.total.connections.merge(status.connections, uniquingKeysWith: +)
            state.total.queued += status.queued
            state.total.counters = state.total.counters + status.counters
            state.total.lastConnectFailure = status.lastConnectFailure ?? state.total.lastConnectFailure
            state.total.lastConnectionLoss = status.lastConnectionLoss ?? state.total.lastConnectionLoss
            return state.answered == loops ? state.total : nil
        }
    }
}
