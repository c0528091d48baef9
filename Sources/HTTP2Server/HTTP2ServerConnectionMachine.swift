import HTTP2
import HTTPCore

/// The life of one HTTP/2 server connection, no I/O: which timer runs,
/// when to send GOAWAY, when to close. The connection reports what the
/// session did (streams open, requests incomplete, resets received) and
/// carries out the actions; nghttp2 itself decides everything about frames.
///
/// Timers, as the HTTP/1.1 listener's (`HTTP1ConnectionMachine.Timeouts`):
/// no stream open → idle (keep-alive) timeout, then GOAWAY and close; a
/// request begun and not complete → header + body timeouts (re-armed each
/// time a request completes), then GOAWAY and close (a slow client: RFC
/// 9113 has no 408 per stream worth sending to one); streams only waiting
/// for answers → no timer (the answers have their own).
public struct HTTP2ServerConnectionMachine: Sendable {
    public enum TimerKind: Equatable, Sendable {
        case idle
        case request
    }

    public enum Action: Equatable, Sendable {
        case armTimer(TimerKind, Duration)
        case cancelTimer
        /// GOAWAY with NO_ERROR and the last stream processed: streams up
        /// to it are still answered, later ones refused (RFC 9113 §6.8).
        case goAway
        /// GOAWAY with this code, nothing more read or answered.
        case terminate(HTTP2ErrorCode)
        /// Close once the output already queued is written.
        case closeAfterFlush
    }

    private enum Phase: Equatable {
        case serving
        /// GOAWAY sent: closes once no stream is open.
        case draining
        case closing
    }

    public let timeouts: HTTP1ConnectionMachine.Timeouts
    public let limits: HTTP2ServerLimits
    private var phase = Phase.serving
    private var timer: TimerKind?
    /// Resets still allowed now (a token bucket), and when it was last filled.
    private var resetAllowance: Int
    private var allowanceFilledAt: UInt64?

    public init(timeouts: HTTP1ConnectionMachine.Timeouts, limits: HTTP2ServerLimits) {
        self.timeouts = timeouts
        self.limits = limits
        resetAllowance = limits.resetBurst
    }

    public var isClosing: Bool { phase == .closing }

    /// After each pass of input or answers: `open` streams, `incomplete`
    /// requests among them; `progressed`: a request completed in the pass.
    public mutating func streamsChanged(open: Int, incomplete: Int, progressed: Bool, into actions: inout [Action]) {
        switch phase {
        case .closing:
            return
        case .draining where open == 0:
            close(into: &actions)
            return
        case .serving, .draining:
            break
        }
        let wanted: TimerKind? = incomplete > 0 ? .request : (open == 0 && phase == .serving ? .idle : nil)
        if wanted == timer && !(wanted == .request && progressed) { return }
        timer = wanted
        switch wanted {
        case .idle?: actions.append(.armTimer(.idle, timeouts.keepAlive))
        case .request?: actions.append(.armTimer(.request, timeouts.header + timeouts.body))
        case nil: actions.append(.cancelTimer)
        }
    }

    public mutating func timerFired(_ kind: TimerKind, into actions: inout [Action]) {
        guard phase != .closing, timer == kind else { return }
        timer = nil
        // Idle: the client may still be about to send, so say where we
        // stopped (GOAWAY, RFC 9113 §6.8) rather than vanish.
        actions.append(.terminate(.noError))
        phase = .closing
        actions.append(.closeAfterFlush)
    }

    /// The peer sent `count` more RST_STREAM frames; `now`: monotonic nanoseconds.
    public mutating func resetsReceived(_ count: Int, now: UInt64, into actions: inout [Action]) {
        guard count > 0, phase != .closing else { return }
        if let filledAt = allowanceFilledAt {
            let seconds = Int((now &- filledAt) / 1_000_000_000)
            if seconds > 0 {
                resetAllowance = min(limits.resetBurst, resetAllowance + seconds * limits.resetsPerSecond)
                allowanceFilledAt = filledAt + UInt64(seconds) * 1_000_000_000
            }
        } else {
            allowanceFilledAt = now
        }
        resetAllowance -= count
        guard resetAllowance < 0 else { return }
        actions.append(.terminate(.enhanceYourCalm))
        phase = .closing
        actions.append(.closeAfterFlush)
    }

    /// The relay stops: GOAWAY, answer what was begun, then close.
    public mutating func shutdown(open: Int, into actions: inout [Action]) {
        guard phase == .serving else { return }
        actions.append(.goAway)
        phase = .draining
        if timer == .idle {
            timer = nil
            actions.append(.cancelTimer)
        }
        if open == 0 { close(into: &actions) }
    }

    /// The session died (the peer broke the protocol, or closed): what it
    /// queued (its GOAWAY) goes out, then the connection closes.
    public mutating func sessionEnded(into actions: inout [Action]) {
        guard phase != .closing else { return }
        close(into: &actions)
    }

    private mutating func close(into actions: inout [Action]) {
        phase = .closing
        if timer != nil {
            timer = nil
            actions.append(.cancelTimer)
        }
        actions.append(.closeAfterFlush)
    }
}
