import Feedback
import Fleet
import Observability

/// The asynchronous `/api/push` of a fleet (`REDIS_URL`): the accept path
/// adds to the stream `FleetKeys.asyncStream` (`StreamQueue`, bounded by
/// `API_ASYNC_MAX_PENDING` across the fleet); every instance reads it in
/// the consumer group and delivers what it reads (`FleetAsyncDelivery`).
public final class FleetAsyncQueue: AsyncSharedQueue {
    public let stream: StreamQueue
    private let fleet: Fleet

    public init(fleet: Fleet, maxPending: Int, capacity: Int, logger: Logger,
                receive: @escaping StreamQueue.Receive) {
        self.fleet = fleet
        stream = StreamQueue(fleet: fleet, stream: FleetKeys.asyncStream, maxPending: maxPending, capacity: capacity,
                             logger: logger, receive: receive)
    }

    public func add(_ items: [AsyncNotification],
                    completion: @escaping @Sendable (AsyncSharedAddResult) -> Void) {
        // Down: refused at once, rather than after the command timeout (a
        // sender's request would wait 5 s for its 503).
        guard fleet.commands.isConnected else { return completion(.failed("Redis is not connected")) }
        stream.add(items.map(\.fields)) { result in
            switch result {
            case .added: completion(.added)
            case .full: completion(.full)
            case .failed(let error): completion(.failed(error.description))
            }
        }
    }

    public func finish(_ receipt: String, deadToken: FeedbackEntry?, feedback: FeedbackStore) {
        stream.done(receipt, feedback: deadToken.map { StreamAck.Feedback(entry: $0, store: feedback) })
    }

    public var length: Int { stream.length }
    public var claimed: Int { stream.claimed }
}
