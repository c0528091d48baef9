import APNsCore
import EventLoop
import HTTPCore
import RelayCore

/// The relay's log output on a loop: lines batched per loop iteration by
/// the loop's `LoopLogBuffer`. Lines are built as bytes straight into
/// the output (a String per line cost an allocation per request). Holds no
/// reference to the handler, so a delivery's completion can keep it.
public struct RelayLog {
    public let logger: Logger
    /// Lines are written once per loop iteration (see LoopLogBuffer).
    public let buffer: LoopLogBuffer

    public init(buffer: LoopLogBuffer) {
        logger = buffer.logger
        self.buffer = buffer
    }

    public func log(_ level: LogLevel, building message: (inout [UInt8]) -> Void) {
        buffer.log(level, building: message)
    }

    /// `keyID`: the app's token key for the target's environment, named
    /// when APNs rejected the credentials. Inlinable: every Web Push
    /// notification ends here, from the Relay module; inlined into its
    /// caller it costs about 3,900 instructions a notification fewer than
    /// called across the module boundary (callgrind, Benchmarks/callgrind.py
    /// --path webpush: 137,100 → 132,900).
    @inlinable
    public func logDelivery(_ target: RelayTarget, app: String, outcome: DeliveryOutcome, answer: RelayResponse, apnsID: String,
                     started: UInt64, keyID: String? = nil) {
        let level: LogLevel = answer.credentialsRejected ? .error : (answer.status >= 500 ? .warning : .info)
        guard logger.isEnabled(level) else { return }
        log(level) { line in
            switch outcome {
            case .apns(let status, let apnsReason, _):
                appendRelayLine(target, app: app, status: answer.status, apnsStatus: status,
                                reason: apnsReason?.rawValue ?? "-", started: started, apnsID: apnsID, to: &line)
            case .answerTimedOut:
                appendRelayLine(target, app: app, status: answer.status, reason: "timeout", started: started, apnsID: apnsID,
                                to: &line)
            case .connectFailed(let detail):
                appendRelayLine(target, app: app, status: answer.status, reason: "connect failed: " + detail,
                                started: started, apnsID: apnsID, to: &line)
            case .tlsFailed(let detail):
                appendRelayLine(target, app: app, status: answer.status, reason: "TLS failed: " + detail, started: started,
                                apnsID: apnsID, to: &line)
            case .streamFailed(let detail):
                appendRelayLine(target, app: app, status: answer.status, reason: "stream failed: " + detail,
                                started: started, apnsID: apnsID, to: &line)
            case .allConnectionsDown:
                appendRelayLine(target, app: app, status: answer.status, reason: "all APNs connections down", started: started,
                                apnsID: apnsID, to: &line)
            case .overloaded:
                appendRelayLine(target, app: app, status: answer.status, reason: "overloaded", started: started,
                                apnsID: apnsID, to: &line)
            }
            if answer.credentialsRejected, let keyID {
                line.append(contentsOf: " key-id=".utf8)
                line.append(contentsOf: keyID.utf8)
            }
        }
    }

    /// `refused status=… reason="…"`: a request the connection refused
    /// before routing.
    public func logRefusal(status: Int, reason: String) {
        guard logger.isEnabled(.info) else { return }
        log(.info) { $0.append(contentsOf: "refused status=\(status) reason=\"\(reason)\"".utf8) }
    }

    /// `<method> status=… reason="…" latency=…ms`: a request answered
    /// without routing it to APNs. The path may hold a token: only the
    /// method is logged.
    public func logLocal(method: String, status: Int, reason: String, started: UInt64) {
        guard logger.isEnabled(.info) else { return }
        log(.info) { line in
            line.append(contentsOf: method.utf8)
            line.append(contentsOf: " status=".utf8)
            appendDecimal(status, to: &line)
            line.append(contentsOf: " reason=\"".utf8)
            line.append(contentsOf: reason.utf8)
            line.append(contentsOf: "\" latency=".utf8)
            RelayLog.appendLatency(since: started, to: &line)
        }
    }

    /// A relay request answered without APNs (`apns=-`).
    public func logRelay(_ target: RelayTarget, app: String, status: Int, reason: String, started: UInt64) {
        let level: LogLevel = status >= 500 ? .warning : .info
        guard logger.isEnabled(level) else { return }
        log(level) { appendRelayLine(target, app: app, status: status, reason: reason, started: started, to: &$0) }
    }

    /// `relay app=… service=apns env=… token=<8 hex> status=… apns=<status or
    /// -> reason="…" latency=…ms[ apns-id=…]`; `app=-` when the URL named no
    /// app the relay has. The service is in the literal before the
    /// environment: naming it adds no append.
    public func appendRelayLine(_ target: RelayTarget, app: String, status: Int, apnsStatus: Int? = nil, reason: String,
                         started: UInt64, apnsID: String? = nil, to line: inout [UInt8]) {
        line.append(contentsOf: "relay app=".utf8)
        line.append(contentsOf: app.utf8)
        line.append(contentsOf: " service=apns env=".utf8)
        line.append(contentsOf: target.environment.rawValue.utf8)
        line.append(contentsOf: " token=".utf8)
        appendTokenPrefix(target.deviceToken, to: &line)
        line.append(contentsOf: " status=".utf8)
        appendDecimal(status, to: &line)
        line.append(contentsOf: " apns=".utf8)
        if let apnsStatus { appendDecimal(apnsStatus, to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(contentsOf: " reason=\"".utf8)
        line.append(contentsOf: reason.utf8)
        line.append(contentsOf: "\" latency=".utf8)
        RelayLog.appendLatency(since: started, to: &line)
        if let apnsID {
            line.append(contentsOf: " apns-id=".utf8)
            line.append(contentsOf: apnsID.utf8)
        }
    }

    /// Milliseconds with one decimal: `12.3ms`.
    public static func appendLatency(since started: UInt64, to line: inout [UInt8]) {
        let micros = (EventLoop.monotonicNanoseconds() &- started) / 1000
        appendDecimal(Int(micros / 1000), to: &line)
        line.append(UInt8(ascii: "."))
        line.append(UInt8(ascii: "0") + UInt8(micros % 1000 / 100))
        line.append(contentsOf: "ms".utf8)
    }
}
