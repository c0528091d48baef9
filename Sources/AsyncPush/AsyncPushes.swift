import Delivery
import FCMCore
import EventLoop
import RelayCore
import Synchronization

/// What every loop's asynchronous `/api/push` shares: whether a request
/// that does not choose is asynchronous (`API_ASYNC`), the retry policy
/// (`API_ASYNC_MAX_TRIES`), the bound on what is pending
/// (`API_ASYNC_MAX_PENDING`), the counts, and every loop's queue, each made
/// here (`makeQueue`).
public final class AsyncPushes: Sendable {
    public let byDefault: Bool
    public let policy: AsyncRetryPolicy
    /// `API_ASYNC_MAX_PENDING` over this process's queues. With a fleet the
    /// fleet's queue (`shared`) holds it across the instances instead, and
    /// no notification holds a place here.
    public let bound: AsyncPendingBound
    public let counts = AsyncDeliveryCounts()
    /// With `REDIS_URL`: the fleet's queue, which takes what the accept
    /// path queues; the loops' queues then deliver what this instance reads
    /// from it (`FleetAsyncDelivery`).
    public let shared: (any AsyncSharedQueue)?
    /// Every loop's queue, for shutdown and the fleet's reader.
    public let queues = AsyncQueues()
    /// Set when the fleet's reader stops at shutdown: a retry waiting for
    /// its time is then not tried here, and its entry stays pending in
    /// Redis for another instance to claim.
    private let retriesStopped = Atomic<Bool>(false)

    /// A full queue's 503 asks for this wait: about the time a queue of
    /// the default bound takes to drain a second's worth of requests.
    public static let retryAfterSeconds = 5

    public init(byDefault: Bool, maxTries: Int, maxPending: Int, shared: (any AsyncSharedQueue)? = nil) {
        self.byDefault = byDefault
        self.shared = shared
        policy = AsyncRetryPolicy(maxTries: maxTries)
        bound = AsyncPendingBound(maxPending: maxPending)
    }

    /// `loop`'s queue, trying through `path` (APNs) and `fcmPath` (FCM, nil
    /// when the loop has no FCM client), its retries on the loop's
    /// timers, finding a fleet's notification's app with `apps`; `done`
    /// hears each notification's end (the route's metrics), and a fleet's
    /// notification is then acknowledged. The one place a queue is made;
    /// it joins `queues`. On `loop`.
    public func makeQueue(on loop: EventLoop, path: DeliveryPath<APNsPush>, fcmPath: DeliveryPath<FCMPush>? = nil,
                          apps: @escaping (_ id: String) -> RelayApp?,
                          done: @escaping AsyncDeliveryQueue.Done) -> AsyncDeliveryQueue {
        let queue = AsyncDeliveryQueue(path: path, fcmPath: fcmPath, policy: policy, bound: shared == nil ? bound : nil,
                                       counts: counts, apps: apps, shared: shared, done: done) { [self] milliseconds, action in
            guard !areRetriesStopped else { return }
            _ = loop.schedule(after: .milliseconds(milliseconds)) { [self] in
                if !areRetriesStopped { action() }
            }
        }
        queues.add(queue, on: loop)
        return queue
    }

    var areRetriesStopped: Bool { retriesStopped.load(ordering: .relaxed) }

    /// Shutdown of the fleet's reader: no retry starts from now on.
    func stopRetries() {
        retriesStopped.store(true, ordering: .relaxed)
    }
}
