import APNs
import Locking

/// Collects one snapshot of APNs connection states per loop and hands back
/// the sum once every loop has answered.
final class APNsConnectionSums: Sendable {
    private let state: Locked<(answered: Int, total: [APNsConnectionState: Int])>
    private let loops: Int

    init(loops: Int) {
        self.loops = loops
        state = Locked((0, [:]))
    }

    func record(_ connections: [APNsConnectionState: Int], loop: Int) -> [APNsConnectionState: Int]? {
        state.withLock { state in
            state.answered += 1
            state.total.merge(connections, uniquingKeysWith: +)
            return state.answered == loops ? state.total : nil
        }
    }
}
