import Delivery
import APNsCore
import EventLoop
import FeedbackHook
import HTTP1
import HTTP2Server
import HTTPCore
import Locking
import Observability
import ProviderAPI
import Relay
import RelayCore
import XMLRPC

/// The provider API (ARCHITECTURE.md §5.2, §5.6): its listener on API_PORT, and the
/// feedback list and hook every path records into.
extension Daemon {
    /// With FEEDBACK_HOOK_URL, the hook's worker.
    func makeFeedbackHook(_ configuration: Configuration, logger: Logger) throws(StartupFailure) -> FeedbackHook? {
        guard let url = configuration.feedbackHookURL else { return nil }
        let hook: FeedbackHook
        do {
            hook = try FeedbackHook(url: url, headers: configuration.feedbackHookHeaders.map { ($0.name, $0.value) },
                                    queueCapacity: configuration.feedbackHookQueue,
                                    timeout: configuration.feedbackHookTimeout, maxAttempts: Self.hookAttempts,
                                    backoff: .seconds(1), logger: logger)
        } catch {
            throw StartupFailure("FEEDBACK_HOOK_URL: \(error)")
        }
        logger.info("feedback hook: \(hook.url.loggable) (queue \(configuration.feedbackHookQueue))")
        return hook
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
    /// passed one), sending through each loop's APNs client; HTTPS with
    /// `certificate`. HTTP/1.1 and HTTP/2 (h2c by its preface; by ALPN or
    /// its preface over TLS). Returns the listener, its notifications in
    /// flight (`MAX_IN_FLIGHT` of its own) and the port bound.
    func startAPI(_ configuration: Configuration, port: UInt16, socket: Socket?, context: ProviderAPIContext,
                  certificate: ServerCertificate?, loops: [EventLoop],
                  loopContexts: LoopContexts, logger: Logger)
        throws(StartupFailure) -> (HTTP1Listener<ProviderAPIHandler>, InFlightDeliveries, UInt16) {
        var options = ListenerOptions(configuration: configuration)
        options.bindAddress = configuration.apiBindAddress
        options.port = port
        options.limits = HTTP1Limits(maxHeaderBytes: configuration.maxHeaderBytes, maxBodyBytes: configuration.apiMaxBodyBytes)
        let deliveries = InFlightDeliveries(maxInFlight: configuration.maxInFlight)
        let server = HTTP1Listener(options: options, loops: loops, tlsContext: certificate?.context,
                                   protocolSwitch: HTTP2ProtocolSwitch(), warn: { logger.warning($0) }) { loop in
            ProviderAPIHandler(loopContext: loopContexts.value(on: loop), context: context, counters: deliveries,
                               loop: loop)
        }
        do {
            let bound = if let socket { try server.start(acceptingOn: socket) } else { try server.start() }
            return (server, deliveries, bound)
        } catch {
            throw StartupFailure("API_PORT: \(error.description)")
        }
    }
}
