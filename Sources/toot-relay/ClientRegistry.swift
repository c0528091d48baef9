import APNs
import EventLoop
import Locking

/// The APNs client of each loop, touched only on that loop.
final class ClientRegistry: @unchecked Sendable {
    private let lock = Locked<[UnsafeTransfer<(EventLoop, APNsClient)>]>([])
    func add(_ client: APNsClient, on loop: EventLoop) {
        let entry = UnsafeTransfer((loop, client))
        lock.withLock { $0.append(entry) }
    }
    var all: [(EventLoop, APNsClient)] { lock.withLock { $0.map(\.value) } }
}

extension ClientRegistry {
    /// The client of `loop` (the provider API sends through the Web Push
    /// listener's clients, so both share one set of pools per loop).
    func client(on loop: EventLoop) -> APNsClient? {
        all.first { $0.0 === loop }?.1
    }
}
