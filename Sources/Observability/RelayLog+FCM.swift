import FCMCore
import HTTPCore
import RelayCore

// The FCM route's lines: `relay app=… service=fcm token=<8 characters>
// status=… fcm=<FCM's status or -> reason="…" latency=…ms[ message-id=…]`,
// the APNs route's line with the service named where the environment
// stands (FCM has none).

extension RelayLog {
    /// An FCM relay request answered without FCM (`fcm=-`).
    public func logFCMRelay(_ target: FCMRelayTarget, app: String, status: Int, reason: String, started: UInt64) {
        let level: LogLevel = status >= 500 ? .warning : .info
        guard logger.isEnabled(level) else { return }
        log(level) { appendFCMRelayLine(target, app: app, status: status, reason: reason, started: started, to: &$0) }
    }

    /// An FCM relay request FCM (or the way to it) answered. `account`: the
    /// service account, named when FCM rejected it (never its key).
    public func logFCMDelivery(_ target: FCMRelayTarget, app: String, delivery: FCMDelivery, answer: RelayResponse,
                               messageID: String, started: UInt64, account: FCMServiceAccount?) {
        let level: LogLevel = answer.credentialsRejected ? .error : (answer.status >= 500 ? .warning : .info)
        guard logger.isEnabled(level) else { return }
        var fcmStatus: Int?
        var reason: String
        switch delivery.outcome {
        case .answered(.sent, _, _):
            (fcmStatus, reason) = (200, "-")
        case .answered(.failed(let error), _, _):
            (fcmStatus, reason) = (error.httpStatus, error.reason.text)
        default:
            reason = delivery.verdict.failureText
        }
        log(level) { line in
            appendFCMRelayLine(target, app: app, status: answer.status, fcmStatus: fcmStatus, reason: reason,
                               started: started, messageID: messageID, to: &line)
            if answer.credentialsRejected, let account {
                line.append(contentsOf: " account=\"".utf8)
                line.append(contentsOf: account.description.utf8)
                line.append(UInt8(ascii: "\""))
            }
        }
    }

    func appendFCMRelayLine(_ target: FCMRelayTarget, app: String, status: Int, fcmStatus: Int? = nil, reason: String,
                            started: UInt64, messageID: String? = nil, to line: inout [UInt8]) {
        line.append(contentsOf: "relay app=".utf8)
        line.append(contentsOf: app.utf8)
        line.append(contentsOf: " service=fcm token=".utf8)
        if let token = target.token { appendTokenPrefix(token.text, to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(contentsOf: " status=".utf8)
        appendDecimal(status, to: &line)
        line.append(contentsOf: " fcm=".utf8)
        if let fcmStatus { appendDecimal(fcmStatus, to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(contentsOf: " reason=\"".utf8)
        line.append(contentsOf: reason.utf8)
        line.append(contentsOf: "\" latency=".utf8)
        RelayLog.appendLatency(since: started, to: &line)
        if let messageID {
            line.append(contentsOf: " message-id=".utf8)
            line.append(contentsOf: messageID.utf8)
        }
    }
}
