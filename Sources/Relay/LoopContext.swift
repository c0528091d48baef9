import APNsCore
import Delivery
import EventLoop
import FCMCore
import Observability
import RelayCore

/// What one event loop's request handlers share, made for the loop before
/// any listener starts and handed to each listener's handler there: the
/// loop's APNs client (the sender every route delivers through), its log
/// buffer (one write per loop iteration), its metrics recorders, and the
/// apps served, which a reload replaces on every loop at once.
///
/// Confined to its loop: made, read and replaced on it.
public final class LoopContext {
    /// APNs as this loop's push service, over the loop's APNs client: the
    /// service every route delivers through.
    let apns: APNsPush
    /// FCM as this loop's second push service, over the loop's FCM client;
    /// nil: no FCM client on this loop (an FCM URL is then answered as an
    /// app without FCM credentials is).
    let fcm: FCMPush?
    /// APNs' broadcast API over the same client (the loop's `APNsClient`
    /// is one); nil: the sender carries notifications only (test senders).
    let broadcasts: (any APNsBroadcastSender)?
    /// Where every handler's lines go, written once per iteration of the loop.
    let output: RelayLog
    /// What the URLs' and the API's app references resolve to.
    public private(set) var apps: RelayApps
    /// This loop's Web Push and provider API counts (with METRICS_PORT).
    let webPushMetrics: RelayMetricsRecorder?
    let providerMetrics: ProviderMetricsRecorder?

    /// Log lines are batched per iteration of `loop`, the loop the context
    /// is used on. `fcmSender`: the loop's FCM client, nil for none.
    public init(sender: NotificationSender, fcmSender: FCMSender? = nil, apps: RelayApps, logger: Logger, loop: EventLoop,
                metrics: RelayMetrics? = nil, providerMetrics: ProviderMetrics? = nil) {
        apns = APNsPush(sender: sender)
        broadcasts = sender as? any APNsBroadcastSender
        fcm = fcmSender.map(FCMPush.init(sender:))
        self.apps = apps
        output = RelayLog(buffer: LoopLogBuffer(logger: logger, loop: loop))
        webPushMetrics = metrics?.makeRecorder()
        self.providerMetrics = providerMetrics?.makeRecorder()
    }

    /// Serves `apps` from the next request on (a reload). Requests already
    /// sent finish with the credentials they were sent with.
    public func replaceApps(_ apps: RelayApps) {
        self.apps = apps
        providerMetrics?.appsReplaced()
    }

    /// Writes the lines still waiting in this loop's buffer (shutdown).
    public func flushLog() {
        output.buffer.flush()
    }
}

/// Every loop's context, made before the listeners: each listener's handler
/// on a loop takes that loop's.
public typealias LoopContexts = PerLoop<LoopContext>
