import APNsCore
import Feedback
import Fleet
import Testing

private func entries(_ numbers: ClosedRange<Int>) -> [FeedbackEntry] {
    numbers.map { FeedbackEntry(app: "toot", environment: .production, token: String($0), reason: "Unregistered",
                                time: Int64($0)) }
}

@Suite("Feedback flush machine: one batch per app out at a time, sent again until written")
struct FeedbackFlushMachineTests {
    let start = ContinuousClock.now

    @Test("a round while disconnected does nothing; connected, it asks for a take of every app")
    func roundTakesOnlyConnected() {
        var machine = FeedbackFlushMachine()
        var actions: [FeedbackFlushMachine.Action] = []
        machine.round(now: start, connected: false, force: true, into: &actions)
        #expect(actions.isEmpty)
        machine.round(now: start, connected: true, force: false, into: &actions)
        #expect(actions == [.take(skipping: [])])
    }

    @Test("taken entries go out as batch 1, then 2 once 1 is written; a trim is counted")
    func batchesInSequence() {
        var machine = FeedbackFlushMachine()
        var actions: [FeedbackFlushMachine.Action] = []
        machine.taken(app: "toot", entries: entries(1...3), into: &actions)
        #expect(actions == [.send(FeedbackBatch(app: "toot", sequence: 1, entries: entries(1...3)))])
        #expect(machine.entriesOut == 3 && machine.isOut(app: "toot"))
        actions = []
        machine.round(now: start, connected: true, force: false, into: &actions)
        #expect(actions == [.take(skipping: ["toot"])])
        actions = []
        machine.written(app: "toot", sequence: 1, dropped: 2, into: &actions)
        #expect(actions == [.countDropped(app: "toot", count: 2)])
        #expect(machine.entriesOut == 0)
        actions = []
        machine.taken(app: "toot", entries: entries(4...4), into: &actions)
        #expect(actions == [.send(FeedbackBatch(app: "toot", sequence: 2, entries: entries(4...4)))])
        actions = []
        machine.taken(app: "other", entries: [], into: &actions)
        #expect(actions.isEmpty)
    }

    @Test("a failed batch is logged once, sent again with the same sequence after a growing delay, or at once when forced")
    func failedBatchRetries() {
        var machine = FeedbackFlushMachine()
        var actions: [FeedbackFlushMachine.Action] = []
        machine.taken(app: "toot", entries: entries(1...2), into: &actions)
        let batch = FeedbackBatch(app: "toot", sequence: 1, entries: entries(1...2))
        actions = []
        machine.failed(app: "toot", sequence: 1, error: "Redis: timed out", now: start, into: &actions)
        #expect(actions == [.logFailure(app: "toot", entries: 2, error: "Redis: timed out")])
        actions = []
        machine.round(now: start + .milliseconds(100), connected: true, force: false, into: &actions)
        #expect(actions == [.take(skipping: ["toot"])])
        actions = []
        machine.round(now: start + .milliseconds(200), connected: true, force: false, into: &actions)
        #expect(actions == [.send(batch), .take(skipping: ["toot"])])
        actions = []
        machine.failed(app: "toot", sequence: 1, error: "Redis: timed out", now: start + .seconds(1), into: &actions)
        #expect(actions.isEmpty)
        machine.round(now: start + .seconds(1) + .milliseconds(300), connected: true, force: false, into: &actions)
        #expect(actions == [.take(skipping: ["toot"])])
        actions = []
        machine.round(now: start + .seconds(1) + .milliseconds(400), connected: true, force: false, into: &actions)
        #expect(actions == [.send(batch), .take(skipping: ["toot"])])
        actions = []
        machine.failed(app: "toot", sequence: 1, error: "x", now: start + .seconds(2), into: &actions)
        machine.round(now: start + .seconds(2), connected: true, force: true, into: &actions)
        #expect(actions == [.send(batch), .take(skipping: ["toot"])])
        actions = []
        machine.written(app: "toot", sequence: 1, dropped: 0, into: &actions)
        #expect(actions == [.logRecovered(app: "toot", entries: 2, failures: 3)])
        #expect(!machine.isOut(app: "toot"))
    }

    @Test("the retry delay doubles up to its cap")
    func retryDelayCapped() {
        var machine = FeedbackFlushMachine()
        var actions: [FeedbackFlushMachine.Action] = []
        machine.taken(app: "toot", entries: entries(1...1), into: &actions)
        var now = start
        for _ in 0..<12 {
            machine.failed(app: "toot", sequence: 1, error: "x", now: now, into: &actions)
            actions = []
            machine.round(now: now + FeedbackFlushMachine.maxRetryDelay, connected: true, force: false, into: &actions)
            #expect(actions.first == .send(FeedbackBatch(app: "toot", sequence: 1, entries: entries(1...1))))
            now = now + FeedbackFlushMachine.maxRetryDelay
        }
    }
}
