import EventLoop
import Locking

/// Every loop's `AsyncDeliveryQueue` (`AsyncPushes.makeQueue` adds each),
/// each reached on its own loop: what shutdown drains, and where the
/// fleet's reader hands what it reads.
public final class AsyncQueues: Sendable {
    private let queues = Locked<[(loop: EventLoop, queue: UnsafeTransfer<AsyncDeliveryQueue>)]>([])

    func add(_ queue: AsyncDeliveryQueue, on loop: EventLoop) {
        queues.withLock { $0.append((loop, UnsafeTransfer(queue))) }
    }

    public var count: Int { queues.withLock { $0.count } }

    /// Each loop with its queue, to be used on that loop only.
    var all: [(loop: EventLoop, queue: UnsafeTransfer<AsyncDeliveryQueue>)] { queues.withLock { $0 } }

    /// Runs `body` with each queue on its loop; returns at once.
    public func forEach(_ body: @escaping @Sendable (AsyncDeliveryQueue) -> Void) {
        for (loop, box) in all {
            loop.execute { body(box.value) }
        }
    }
}
