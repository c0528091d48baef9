import FCMCore
import Prometheus
import RelayCore

// The Web Push path's FCM series: `toot_relay_notifications_total` as APNs'
// are, `service="fcm"`, FCM's codes as reasons, found as APNs' are (an
// integer index into a per-loop cache, a series made on first use).

extension RelayMetrics {
    /// The `environment` of an FCM series: empty. FCM has no environments
    /// (one host, no sandbox), and Prometheus reads an empty label value as
    /// no label at all: `sum by (app, environment)` puts FCM in a group of
    /// its own, and a filter on `environment="production"` still selects
    /// APNs' production only, as before FCM.
    static let fcmEnvironment = ""

    /// The `reason` label values of FCM's series: "" (delivered), the
    /// relay's own reasons, then FCM's named codes.
    static let fcmReasonSlots = [""] + LocalReason.allCases.map(\.rawValue) + FCMReason.named.map(\.text)
    static let fcmSeriesCount = statusSlots.count * fcmReasonSlots.count
}

extension RelayMetricsRecorder {
    /// Counts one FCM notification's end: the relay's own reason, else
    /// FCM's code, else "".
    public func countFCM(app: String, status: Int, localReason: LocalReason? = nil, fcmReason: FCMReason? = nil) {
        var reasonSlot = localReason?.slot ?? 0
        if let fcmReason {
            guard let index = FCMReason.named.firstIndex(of: fcmReason) else {
                return metrics.countRare(app: app, service: .fcm, environment: RelayMetrics.fcmEnvironment,
                                         status: status, reason: fcmReason.text)
            }
            reasonSlot = 1 + LocalReason.allCases.count + index
        }
        guard let statusSlot = RelayMetrics.statusSlot(status) else {
            return metrics.countRare(app: app, service: .fcm, environment: RelayMetrics.fcmEnvironment, status: status,
                                     reason: RelayMetrics.fcmReasonSlots[reasonSlot])
        }
        fcmSeries.counter(app: app, slot: statusSlot * RelayMetrics.fcmReasonSlots.count + reasonSlot) {
            metrics.notificationCounter(app: app, service: .fcm, environment: RelayMetrics.fcmEnvironment,
                                        status: status, reason: RelayMetrics.fcmReasonSlots[reasonSlot])
        }.increment()
    }

    /// Counts the end of an FCM send: FCM's code when it refused, the
    /// relay's own reason when FCM did not answer, `payload_dropped` for a
    /// message FCM took without its ciphertext.
    public func countFCM(app: String, status: Int, delivery: FCMDelivery, ciphertextDropped: Bool = false) {
        switch delivery.outcome {
        case .answered(.sent, _, _):
            countFCM(app: app, status: status, localReason: ciphertextDropped ? .payloadDropped : nil)
        case .answered(.failed(let error), _, _):
            countFCM(app: app, status: status, fcmReason: error.reason)
        default:
            countFCM(app: app, status: status, localReason: LocalReason(delivery.outcome))
        }
    }
}

extension LocalReason {
    /// The relay's reason for an FCM send's end; nil for FCM's answer (its
    /// own code counts).
    public init?(_ outcome: FCMOutcome) {
        switch outcome {
        case .answered: return nil
        case .noAccessToken(let verdict):
            self = verdict.webPushStatus == 502 ? .noAccessToken : .tokenEndpointUnavailable
        case .answerTimedOut: self = .timeout
        case .connectFailed: self = .connectFailed
        case .tlsFailed: self = .tlsFailed
        case .streamFailed: self = .streamFailed
        case .allConnectionsDown: self = .allConnectionsDown
        case .overloaded: self = .overloaded
        }
    }
}
