import Delivery
import APNs
import EventLoop
import Feedback
import FeedbackHook
import HTTP1
import Locking
import Observability
import ProviderAPI
import Relay
import RelayCore
import XMLRPC

/// The provider API (ARCHITECTURE.md §11): its listener on API_PORT, and the
/// feedback list and hook every path records into.
extension Daemon {
    /// The feedback list (FEEDBACK_MAX per app) and, with FEEDBACK_HOOK_URL,
    /// the hook's worker.
    func makeFeedbackSink(_ configuration: Configuration, logger: Logger) throws(StartupFailure) -> FeedbackSink {
        var hook: FeedbackHook?
        if let url = configuration.feedbackHookURL {
            do {
                hook = try FeedbackHook(url: url, headers: configuration.feedbackHookHeaders.map { ($0.name, $0.value) },
                                        queueCapacity: configuration.feedbackHookQueue,
                                        timeout: configuration.feedbackHookTimeout, maxAttempts: Self.hookAttempts,
                                        backoff: .seconds(1), log: { logger.warning($0) })
            } catch {
                throw StartupFailure("FEEDBACK_HOOK_URL: \(error)")
            }
            logger.info("feedback hook: \(hook?.url.loggable ?? "") (queue \(configuration.feedbackHookQueue))")
        }
        return FeedbackSink(store: FeedbackStore(maxPerApp: configuration.feedbackMax), hook: hook)
    }

    /// A hook post is tried this often (backoff 1 s, 2 s, 4 s between), then counted failed.
    static let hookAttempts = 4

    /// The request limits of the API (API_MAX_*), and XML-RPC's.
    func providerLimits(_ configuration: Configuration) -> (ProviderLimits, XMLRPCLimits) {
        (ProviderLimits(maxBodyBytes: configuration.apiMaxBodyBytes,
                        maxNotifications: configuration.apiMaxNotifications, maxTokens: configuration.apiMaxTokens),
         // pyapns' calls are a few KiB: nesting past 64 or 100,000
         // elements is no notification (billion-laughs-shaped input).
         XMLRPCLimits(maxBodyBytes: configuration.apiMaxBodyBytes, maxDepth: 64, maxElements: 100_000,
                      maxStringBytes: configuration.apiMaxBodyBytes))
    }

    /// Starts the API listener on every loop (on `socket` when systemd
    /// passed one), sending through each loop's APNs client. Returns the
    /// listener, its notifications in flight (`MAX_IN_FLIGHT` of its own)
    /// and the port bound.
    /// Each loop's queue of asynchronous notifications joins `asyncQueues`
    /// (for shutdown).
    func startAPI(_ configuration: Configuration, port: UInt16, socket: Socket?, context: ProviderAPIContext,
                  loops: [EventLoop],
                  loopContexts: LoopContexts, asyncQueues: AsyncQueues, logger: Logger)
        throws(StartupFailure) -> (HTTP1Listener<ProviderAPIHandler>, InFlightDeliveries, UInt16) {
        var options = ListenerOptions(configuration: configuration)
        options.bindAddress = configuration.apiBindAddress
        options.port = port
        options.limits = HTTP1Limits(maxHeaderBytes: configuration.maxHeaderBytes, maxBodyBytes: configuration.apiMaxBodyBytes)
        let deliveries = InFlightDeliveries(maxInFlight: configuration.maxInFlight)
        let server = HTTP1Listener(options: options, loops: loops, tlsContext: nil,
                                   warn: { logger.warning($0) }) { loop in
            let handler = ProviderAPIHandler(loopContext: loopContexts.value(on: loop), context: context,
                                             counters: deliveries, loop: loop)
            if let queue = handler.asyncQueue { asyncQueues.add(queue, on: loop) }
            return handler
        }
        do {
            let bound = if let socket { try server.start(acceptingOn: socket) } else { try server.start() }
            return (server, deliveries, bound)
        } catch {
            throw StartupFailure("API_PORT: \(error.description)")
        }
    }
}

/// Every loop's `AsyncDeliveryQueue`, each reached on its own loop: what
/// shutdown drains.
final class AsyncQueues: Sendable {
    private let queues = Locked<[(loop: EventLoop, queue: UnsafeTransfer<AsyncDeliveryQueue>)]>([])

    func add(_ queue: AsyncDeliveryQueue, on loop: EventLoop) {
        queues.withLock { $0.append((loop, UnsafeTransfer(queue))) }
    }

    var count: Int { queues.withLock { $0.count } }

    /// Runs `body` with each queue on its loop; returns at once.
    func forEach(_ body: @escaping @Sendable (AsyncDeliveryQueue) -> Void) {
        for (loop, box) in queues.withLock({ $0 }) {
            loop.execute { body(box.value) }
        }
    }
}
