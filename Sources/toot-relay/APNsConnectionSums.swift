import APNs
import Locking

/// Collects one snapshot of APNs connection states and waiting
/// notifications per loop and hands back the sums once every loop has
/// answered.
final class APNsConnectionSums: Sendable {
    struct Sums: Sendable {
        var connections: [APNsConnectionState: Int] = [:]
        /// Notifications waiting for a stream (`APNsClientStatus.queued`).
        var queued = 0
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
            return state.answered == loops ? state.total : nil
        }
    }
}
