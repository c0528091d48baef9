import APNs
import EventLoop
import Synchronization

/// The APNs client of each loop, touched only on that loop.
final class ClientRegistry: @unchecked Sendable {
    private let lock = Mutex<[UnsafeTransfer<(EventLoop, APNsClient)>]>([])
    func add(_ client: APNsClient, on loop: EventLoop) {
        let entry = UnsafeTransfer((loop, client))
        lock.withLock { $0.append(entry) }
    }
    var all: [(EventLoop, APNsClient)] { lock.withLock { $0.map(\.value) } }
}
