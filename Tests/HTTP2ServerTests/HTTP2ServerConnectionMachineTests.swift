import HTTP2
import HTTP2Server
import HTTPCore
import Testing

@Suite("HTTP/2 connection machine")
struct HTTP2ConnectionMachineTests {
    private static let timeouts = HTTP1ConnectionMachine.Timeouts(header: .seconds(10), body: .seconds(5),
                                                                  keepAlive: .seconds(75), lastCall: .seconds(1))
    private func machine(_ limits: HTTP2ServerLimits = HTTP2ServerLimits()) -> HTTP2ServerConnectionMachine {
        HTTP2ServerConnectionMachine(timeouts: Self.timeouts, limits: limits)
    }

    typealias Step = (open: Int, incomplete: Int, progressed: Bool, actions: [HTTP2ServerConnectionMachine.Action])

    @Test("the timer follows the streams: idle without any, the request timeouts while one is incomplete, none while answers are awaited",
          arguments: [
              [(0, 0, false, [.armTimer(.idle, .seconds(75))]),
               (1, 1, false, [.armTimer(.request, .seconds(15))]),
               (1, 0, true, [.cancelTimer]),
               (0, 0, false, [.armTimer(.idle, .seconds(75))]),
               (0, 0, false, [])],
              // Re-armed when a request completed while another is still incomplete.
              [(2, 2, false, [.armTimer(.request, .seconds(15))]),
               (2, 1, true, [.armTimer(.request, .seconds(15))]),
               (2, 1, false, [])],
          ] as [[Step]])
    func timers(steps: [Step]) {
        var machine = machine()
        for step in steps {
            var actions: [HTTP2ServerConnectionMachine.Action] = []
            machine.streamsChanged(open: step.open, incomplete: step.incomplete, progressed: step.progressed, into: &actions)
            #expect(actions == step.actions, "after \(step.open) open, \(step.incomplete) incomplete")
        }
    }

    @Test("a timer that fires sends GOAWAY and closes", arguments: [HTTP2ServerConnectionMachine.TimerKind.idle, .request])
    func timerFires(kind: HTTP2ServerConnectionMachine.TimerKind) {
        var machine = machine()
        var actions: [HTTP2ServerConnectionMachine.Action] = []
        machine.streamsChanged(open: kind == .idle ? 0 : 1, incomplete: kind == .idle ? 0 : 1, progressed: false, into: &actions)
        actions = []
        machine.timerFired(kind, into: &actions)
        #expect(actions == [.terminate(.noError), .closeAfterFlush])
        #expect(machine.isClosing)
        actions = []
        machine.timerFired(kind, into: &actions)
        #expect(actions.isEmpty)
    }

    @Test("shutdown: GOAWAY, the open streams are answered, then the connection closes")
    func shutdownDrains() {
        var machine = machine()
        var actions: [HTTP2ServerConnectionMachine.Action] = []
        machine.streamsChanged(open: 2, incomplete: 0, progressed: true, into: &actions)
        actions = []
        machine.shutdown(open: 2, into: &actions)
        #expect(actions == [.goAway])
        actions = []
        machine.streamsChanged(open: 1, incomplete: 0, progressed: false, into: &actions)
        #expect(actions.isEmpty)
        machine.streamsChanged(open: 0, incomplete: 0, progressed: false, into: &actions)
        #expect(actions == [.closeAfterFlush])
    }

    @Test("shutdown of an idle connection closes at once")
    func shutdownIdle() {
        var machine = machine()
        var actions: [HTTP2ServerConnectionMachine.Action] = []
        machine.streamsChanged(open: 0, incomplete: 0, progressed: false, into: &actions)
        actions = []
        machine.shutdown(open: 0, into: &actions)
        #expect(actions == [.goAway, .cancelTimer, .closeAfterFlush])
    }

    @Test("rapid reset: beyond the burst, and the rate after it, GOAWAY ENHANCE_YOUR_CALM")
    func rapidReset() {
        var machine = machine(HTTP2ServerLimits(resetBurst: 10, resetsPerSecond: 2))
        var actions: [HTTP2ServerConnectionMachine.Action] = []
        let second: UInt64 = 1_000_000_000
        machine.resetsReceived(10, now: 5 * second, into: &actions)
        #expect(actions.isEmpty)
        // Three seconds later: six more allowed, not seven.
        machine.resetsReceived(6, now: 8 * second, into: &actions)
        #expect(actions.isEmpty)
        machine.resetsReceived(1, now: 8 * second + 1, into: &actions)
        #expect(actions == [.terminate(.enhanceYourCalm), .closeAfterFlush])
        #expect(machine.isClosing)
    }

    @Test("the allowance refills up to the burst, no further")
    func resetAllowanceCapped() {
        var machine = machine(HTTP2ServerLimits(resetBurst: 10, resetsPerSecond: 2))
        var actions: [HTTP2ServerConnectionMachine.Action] = []
        machine.resetsReceived(1, now: 0, into: &actions)
        machine.resetsReceived(10, now: 3600 * 1_000_000_000, into: &actions)
        #expect(actions.isEmpty)
        machine.resetsReceived(1, now: 3600 * 1_000_000_000, into: &actions)
        #expect(actions == [.terminate(.enhanceYourCalm), .closeAfterFlush])
    }

    @Test("a session that ended closes once its last frames are out")
    func sessionEnded() {
        var machine = machine()
        var actions: [HTTP2ServerConnectionMachine.Action] = []
        machine.streamsChanged(open: 0, incomplete: 0, progressed: false, into: &actions)
        actions = []
        machine.sessionEnded(into: &actions)
        #expect(actions == [.cancelTimer, .closeAfterFlush])
        actions = []
        machine.sessionEnded(into: &actions)
        #expect(actions.isEmpty)
    }
}
