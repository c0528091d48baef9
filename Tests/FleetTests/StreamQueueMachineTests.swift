import Feedback
import Fleet
import Testing

private typealias Action = StreamQueueMachine.Action

private let renewEvery: Duration = .seconds(10)
private let claimEvery: Duration = .seconds(15)
private let gathering: Duration = .milliseconds(2)

/// Stream ids `1-first` … `1-last`.
private func ids(_ numbers: ClosedRange<Int>) -> [String] { numbers.map { "1-\($0)" } }

/// Acknowledgements of `ids` without feedback.
private func acks(_ ids: String...) -> [StreamAck] { ids.map { StreamAck(id: $0) } }

extension StreamQueueMachine {
    /// Feeds one event; what it decided.
    fileprivate mutating func on(_ event: (inout StreamQueueMachine, inout [Action]) -> Void) -> [Action] {
        var actions: [Action] = []
        event(&self, &actions)
        return actions
    }

    /// A read's reply bringing `ids`, handed on: they are held, and the
    /// next read is out if there is room.
    fileprivate mutating func hold(_ ids: [String]) {
        _ = on { $0.readReplied(.entries(ids: ids, skipped: 0), into: &$1) }
        _ = on { $0.handedOn(into: &$1) }
    }
}

/// A machine whose group exists: its first read and its first claim are out.
private func running(capacity: Int = 100) -> StreamQueueMachine {
    var machine = StreamQueueMachine(capacity: capacity, renewInterval: renewEvery, claimInterval: claimEvery)
    _ = machine.on { $0.start(into: &$1) }
    _ = machine.on { $0.groupCreated(into: &$1) }
    return machine
}

/// Where the reading is while `1-1` is held and no read may start.
enum ReadBusy: String, CaseIterable, CustomTestStringConvertible {
    case readOut = "a read out"
    case handingOn = "its entries with receive"
    case waitingToRetry = "waiting to retry a failed read"
    case makingGroup = "making the group again"

    var testDescription: String { rawValue }
}

@Suite("Stream queue machine: every decision of a fleet stream's consumer, without I/O")
struct StreamQueueMachineTests {
    // MARK: the group

    @Test("start asks for the group; once it exists, it reads for its room, reads the length and claims")
    func startMakesTheGroupThenReadsRenewsAndClaims() {
        var machine = StreamQueueMachine(capacity: 100, renewInterval: renewEvery, claimInterval: claimEvery)
        #expect(machine.held == 0 && !machine.acknowledging)
        #expect(machine.on { $0.start(into: &$1) } == [.createGroup])
        #expect(machine.on { $0.groupCreated(into: &$1) }
            == [.read(count: 100), .readLength, .schedule(.renew, after: renewEvery), .claim(cursor: "0-0", count: 100)])
    }

    @Test("a group that cannot be made is said at each failure and tried again after a second")
    func groupCreationRetries() {
        var machine = StreamQueueMachine(capacity: 3, renewInterval: renewEvery, claimInterval: claimEvery)
        _ = machine.on { $0.start(into: &$1) }
        let failed: [Action] = [.log("cannot create the consumer group: Redis: timed out; trying again in 1 s"),
                                .schedule(.createGroup, after: .seconds(1))]
        for _ in 0..<2 {
            #expect(machine.on { $0.groupCreateFailed(error: "Redis: timed out", into: &$1) } == failed)
            #expect(machine.on { $0.fired(.createGroup, into: &$1) } == [.createGroup])
        }
        #expect(machine.on { $0.groupCreated(into: &$1) }
            == [.read(count: 3), .readLength, .schedule(.renew, after: renewEvery), .claim(cursor: "0-0", count: 3)])
    }

    @Test("a queue stopped before its group exists begins its renewals but neither reads nor claims")
    func stoppedBeforeTheGroup() {
        var machine = StreamQueueMachine(capacity: 10, renewInterval: renewEvery, claimInterval: claimEvery)
        machine.stop()
        _ = machine.on { $0.start(into: &$1) }
        #expect(machine.on { $0.groupCreated(into: &$1) }
            == [.readLength, .schedule(.renew, after: renewEvery), .schedule(.claim, after: claimEvery)])
    }

    @Test("a read answered NOGROUP makes the group again and then reads; the rounds do not begin twice")
    func lostGroupIsMadeAgain() {
        var machine = running()
        #expect(machine.on { $0.readReplied(.noGroup, into: &$1) }
            == [.log("the consumer group is gone (Redis lost its data?): creating it again"), .createGroup])
        #expect(machine.on { $0.groupCreateFailed(error: "x", into: &$1) }
            == [.log("cannot create the consumer group: x; trying again in 1 s"), .schedule(.createGroup, after: .seconds(1))])
        #expect(machine.on { $0.fired(.createGroup, into: &$1) } == [.createGroup])
        #expect(machine.on { $0.groupCreated(into: &$1) } == [.read(count: 100)])
    }

    // MARK: reading

    @Test("a read asks for the room left, at most a batch; with no room there is none", arguments: [
        (capacity: 1, held: 0, count: 1), (capacity: 100, held: 0, count: 100), (capacity: 100, held: 40, count: 60),
        (capacity: 100, held: 99, count: 1), (capacity: 500, held: 0, count: 500), (capacity: 2000, held: 0, count: 500),
        (capacity: 2000, held: 1700, count: 300), (capacity: 100, held: 100, count: nil),
    ] as [(capacity: Int, held: Int, count: Int?)])
    func readCount(capacity: Int, held: Int, count: Int?) {
        var machine = running(capacity: capacity)
        if held > 0 { _ = machine.on { $0.readReplied(.entries(ids: ids(1...held), skipped: 0), into: &$1) } }
        let next = held > 0 ? machine.on { $0.handedOn(into: &$1) }
            : machine.on { $0.readReplied(.entries(ids: [], skipped: 0), into: &$1) }
        #expect(next == (count.map { [.read(count: $0)] } ?? []))
        #expect(machine.held == held)
    }

    @Test("while a read is busy, done and release start no other", arguments: ReadBusy.allCases)
    func noSecondRead(busy: ReadBusy) {
        var machine = running()
        switch busy {
        case .readOut:
            machine.hold(["1-1", "1-2"])
        case .handingOn:
            _ = machine.on { $0.readReplied(.entries(ids: ["1-1", "1-2"], skipped: 0), into: &$1) }
        case .waitingToRetry:
            machine.hold(["1-1", "1-2"])
            _ = machine.on { $0.readReplied(.failed("timed out"), into: &$1) }
        case .makingGroup:
            machine.hold(["1-1", "1-2"])
            _ = machine.on { $0.readReplied(.noGroup, into: &$1) }
        }
        #expect(machine.on { $0.done("1-1", into: &$1) } == [.schedule(.ackFlush, after: gathering)])
        #expect(machine.on { $0.release("1-2", into: &$1) } == [])
        #expect(machine.held == 0)
    }

    @Test("entries finished inside receive give their room to the next read")
    func nextReadAfterReceive() {
        var machine = running()
        #expect(machine.on { $0.readReplied(.entries(ids: ids(1...100), skipped: 0), into: &$1) }
            == [.deliver(ids: ids(1...100))])
        #expect(machine.on { $0.done("1-1", into: &$1) } == [.schedule(.ackFlush, after: gathering)])
        for id in ids(2...100) { #expect(machine.on { $0.done(id, into: &$1) } == []) }
        #expect(machine.on { $0.handedOn(into: &$1) } == [.read(count: 100)])
    }

    @Test("what a read brings that is held already is not delivered again, nor twice from one reply")
    func heldEntriesAreNotDeliveredAgain() {
        var machine = running()
        machine.hold(["1-1"])
        #expect(machine.on { $0.readReplied(.entries(ids: ["1-1", "1-2", "1-2", "1-3"], skipped: 0), into: &$1) }
            == [.deliver(ids: ["1-2", "1-3"])])
        #expect(machine.held == 3 && machine.holds("1-2"))
    }

    @Test("a read that found nothing reads again at once")
    func emptyReadReadsAgain() {
        var machine = running()
        #expect(machine.on { $0.readReplied(.entries(ids: [], skipped: 0), into: &$1) } == [.read(count: 100)])
    }

    @Test("a failed read is said once, tried again every second, and its recovery is said")
    func failedReadsRetry() {
        var machine = running()
        #expect(machine.on { $0.readReplied(.failed("Redis: timed out"), into: &$1) }
            == [.log("reading failed: Redis: timed out; retrying every second"), .schedule(.read, after: .seconds(1))])
        #expect(machine.on { $0.fired(.read, into: &$1) } == [.read(count: 100)])
        #expect(machine.on { $0.readReplied(.unreadable, into: &$1) } == [.schedule(.read, after: .seconds(1))])
        #expect(machine.malformed == 1)
        #expect(machine.on { $0.fired(.read, into: &$1) } == [.read(count: 100)])
        #expect(machine.on { $0.readReplied(.entries(ids: [], skipped: 0), into: &$1) }
            == [.log("reading again"), .read(count: 100)])
        #expect(machine.on { $0.readReplied(.unreadable, into: &$1) }
            == [.log("reading failed: XREADGROUP answered what is not a stream reply; retrying every second"),
                .schedule(.read, after: .seconds(1))])
    }

    @Test("entries without a valid id are counted and said, from a read or a claim")
    func skippedEntriesAreCounted() {
        var machine = running()
        #expect(machine.on { $0.readReplied(.entries(ids: ["1-1"], skipped: 2), into: &$1) }
            == [.log("2 entries without a valid id skipped"), .deliver(ids: ["1-1"])])
        #expect(machine.on { $0.claimReplied(.entries(cursor: "0-0", ids: [], skipped: 1), into: &$1) }
            == [.log("1 entries without a valid id skipped"), .schedule(.claim, after: claimEvery)])
        #expect(machine.malformed == 3)
    }

    // MARK: finishing

    @Test("done of an id not held does nothing, nor a second done of one")
    func doneOfWhatIsNotHeld() {
        var fresh = StreamQueueMachine(capacity: 5, renewInterval: renewEvery, claimInterval: claimEvery)
        #expect(fresh.on { $0.done("1-1", into: &$1) } == [] && fresh.on { $0.release("1-1", into: &$1) } == [])
        var machine = running()
        #expect(machine.on { $0.done("9-9", into: &$1) } == [])
        machine.hold(["1-1"])
        #expect(machine.on { $0.done("1-1", into: &$1) } == [.schedule(.ackFlush, after: gathering)])
        #expect(machine.on { $0.done("1-1", into: &$1) } == [])
        #expect(machine.on { $0.fired(.ackFlush, into: &$1) } == [.sendAcks(acks("1-1"))])
    }

    @Test("done ids are gathered for 2 ms, then acknowledged a batch a command until none is left", arguments: [
        (done: 1, commands: [1]), (done: 499, commands: [499]), (done: 500, commands: [500]),
        (done: 501, commands: [500, 1]), (done: 1200, commands: [500, 500, 200]),
    ])
    func acknowledgementsAreBatched(done: Int, commands: [Int]) {
        var machine = running(capacity: 2000)
        machine.hold(ids(1...done))
        #expect(machine.on { $0.done("1-1", into: &$1) } == [.schedule(.ackFlush, after: gathering)])
        for id in ids(1...done).dropFirst() { #expect(machine.on { $0.done(id, into: &$1) } == []) }
        var sent: [[String]] = []
        var flushes = 0
        var actions = machine.on { $0.fired(.ackFlush, into: &$1) }
        while flushes < 10 {
            flushes += 1
            for case .sendAcks(let batch) in actions { sent.append(batch.map(\.id)) }
            // A full batch looks once more at once, even when nothing was left.
            guard actions.contains(.schedule(.ackFlush, after: .zero)) else { break }
            actions = machine.on { $0.fired(.ackFlush, into: &$1) }
        }
        #expect(sent.map(\.count) == commands)
        #expect(sent.flatMap { $0 } == ids(1...done))
        #expect(flushes == commands.count + (done % 500 == 0 ? 1 : 0))
        #expect(machine.acknowledging)
        for _ in sent { machine.acksReplied() }
        #expect(!machine.acknowledging)
    }

    @Test("an acknowledgement that failed is said, kept and sent again after a second, or with the next gathered")
    func failedAcknowledgementsAreKept() {
        var machine = running()
        machine.hold(["1-1", "1-2", "1-3"])
        _ = machine.on { $0.done("1-1", into: &$1) }
        _ = machine.on { $0.done("1-2", into: &$1) }
        #expect(machine.on { $0.fired(.ackFlush, into: &$1) } == [.sendAcks(acks("1-1", "1-2"))])
        #expect(machine.on { $0.acksFailed(acks("1-1", "1-2"), error: "Redis: timed out", into: &$1) }
            == [.log("acknowledging 2 entries failed: Redis: timed out; trying again in 1 s"),
                .schedule(.ackFlush, after: .seconds(1))])
        #expect(machine.acknowledging)
        #expect(machine.on { $0.fired(.ackFlush, into: &$1) } == [.sendAcks(acks("1-1", "1-2"))])
        // A flush already waits for a new done: the failed ids go with it.
        #expect(machine.on { $0.done("1-3", into: &$1) } == [.schedule(.ackFlush, after: gathering)])
        #expect(machine.on { $0.acksFailed(acks("1-1", "1-2"), error: "x", into: &$1) }
            == [.log("acknowledging 2 entries failed: x; trying again in 1 s")])
        #expect(machine.on { $0.fired(.ackFlush, into: &$1) } == [.sendAcks(acks("1-3", "1-1", "1-2"))])
        machine.acksReplied()
        #expect(!machine.acknowledging)
    }

    @Test("an id's feedback goes with its acknowledgement, through the gathering, a failure and the try after", arguments: [
        (feedbackOf: ["1-1"], failures: 0), (feedbackOf: ["1-2"], failures: 1),
        (feedbackOf: ["1-1", "1-3"], failures: 2), (feedbackOf: [], failures: 1),
    ])
    func feedbackGoesWithItsAcknowledgement(feedbackOf: [String], failures: Int) {
        let store = FeedbackStore(maxPerApp: 10)
        func feedback(_ id: String) -> StreamAck.Feedback? {
            guard feedbackOf.contains(id) else { return nil }
            return StreamAck.Feedback(entry: FeedbackEntry(app: "toot", environment: .production, token: "t" + id,
                                                           reason: "Unregistered", time: 1), store: store)
        }
        let done = ["1-1", "1-2", "1-3"]
        let expected = done.map { StreamAck(id: $0, feedback: feedback($0)) }
        var machine = running()
        machine.hold(done)
        for id in done { _ = machine.on { $0.done(id, feedback: feedback(id), into: &$1) } }
        var sent = machine.on { $0.fired(.ackFlush, into: &$1) }
        for _ in 0..<failures {
            #expect(sent == [.sendAcks(expected)])
            _ = machine.on { $0.acksFailed(expected, error: "x", into: &$1) }
            sent = machine.on { $0.fired(.ackFlush, into: &$1) }
        }
        #expect(sent == [.sendAcks(expected)])
        #expect(expected.compactMap(\.feedback).map(\.entry.token) == feedbackOf.map { "t" + $0 })
        machine.acksReplied()
        #expect(!machine.acknowledging)
    }

    @Test("a released id is neither held, renewed nor acknowledged, and its room is read for")
    func releasedIDs() {
        var machine = running(capacity: 2)
        _ = machine.on { $0.readReplied(.entries(ids: ["1-1", "1-2"], skipped: 0), into: &$1) }
        #expect(machine.on { $0.handedOn(into: &$1) } == [])
        #expect(machine.on { $0.release("1-1", into: &$1) } == [.read(count: 1)])
        #expect(machine.held == 1 && !machine.holds("1-1"))
        #expect(machine.on { $0.fired(.renew, into: &$1) }
            == [.renew(["1-2"]), .readLength, .schedule(.renew, after: renewEvery)])
        #expect(machine.on { $0.done("1-1", into: &$1) } == [] && !machine.acknowledging)
        #expect(machine.on { $0.release("1-1", into: &$1) } == [])
    }

    // MARK: stopped

    @Test("a stopped queue neither reads nor claims, but delivers what its read out brings, acknowledges and renews")
    func stoppedQueue() {
        var machine = running()
        machine.hold(["1-1", "1-2"])
        machine.stop()
        #expect(machine.on { $0.readReplied(.entries(ids: ["1-3"], skipped: 0), into: &$1) } == [.deliver(ids: ["1-3"])])
        #expect(machine.on { $0.handedOn(into: &$1) } == [])
        #expect(machine.on { $0.done("1-1", into: &$1) } == [.schedule(.ackFlush, after: gathering)])
        #expect(machine.on { $0.fired(.ackFlush, into: &$1) } == [.sendAcks(acks("1-1"))])
        #expect(machine.on { $0.release("1-2", into: &$1) } == [])
        #expect(machine.on { $0.fired(.renew, into: &$1) }
            == [.renew(["1-3"]), .readLength, .schedule(.renew, after: renewEvery)])
        #expect(machine.on { $0.claimReplied(.entries(cursor: "0-0", ids: [], skipped: 0), into: &$1) }
            == [.schedule(.claim, after: claimEvery)])
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.schedule(.claim, after: claimEvery)])
    }

    @Test("a stopped queue's failed read waits its second, then reads nothing")
    func stoppedQueueFailedRead() {
        var machine = running()
        machine.stop()
        #expect(machine.on { $0.readReplied(.failed("x"), into: &$1) }
            == [.log("reading failed: x; retrying every second"), .schedule(.read, after: .seconds(1))])
        #expect(machine.on { $0.fired(.read, into: &$1) } == [])
    }

    // MARK: renewing and claiming

    @Test("a renewal round names every held id, a batch a command, and reads the length")
    func renewalsAreBatched() {
        var machine = running(capacity: 2000)
        machine.hold(ids(1...1200))
        let actions = machine.on { $0.fired(.renew, into: &$1) }
        let renewed = actions.compactMap { action -> [String]? in
            if case .renew(let ids) = action { ids } else { nil }
        }
        #expect(renewed.map(\.count) == [500, 500, 200])
        #expect(Set(renewed.flatMap { $0 }) == Set(ids(1...1200)))
        #expect(actions.suffix(2) == [.readLength, .schedule(.renew, after: renewEvery)])
        machine.lengthRead(1234)
        #expect(machine.length == 1234)
    }

    @Test("a claim asks for the room left, goes on with an unfinished scan at once, and counts what it takes")
    func claims() {
        var machine = running()
        #expect(machine.on { $0.claimReplied(.entries(cursor: "5-0", ids: ["1-1", "1-2"], skipped: 0), into: &$1) }
            == [.deliverClaimed(ids: ["1-1", "1-2"]), .schedule(.claim, after: .zero)])
        #expect(machine.claimed == 2 && machine.held == 2)
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.claim(cursor: "5-0", count: 98)])
        #expect(machine.on { $0.claimReplied(.entries(cursor: "0-0", ids: ["1-2", "1-3"], skipped: 0), into: &$1) }
            == [.deliverClaimed(ids: ["1-3"]), .schedule(.claim, after: claimEvery)])
        #expect(machine.claimed == 3 && machine.held == 3)
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.claim(cursor: "0-0", count: 97)])
    }

    @Test("a claim that failed keeps its cursor, but NOGROUP starts the scan over")
    func claimFailures() {
        var machine = running()
        _ = machine.on { $0.claimReplied(.entries(cursor: "7-0", ids: [], skipped: 0), into: &$1) }
        _ = machine.on { $0.fired(.claim, into: &$1) }
        #expect(machine.on { $0.claimReplied(.failed, into: &$1) } == [.schedule(.claim, after: claimEvery)])
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.claim(cursor: "7-0", count: 100)])
        #expect(machine.on { $0.claimReplied(.unreadable, into: &$1) }
            == [.log("XAUTOCLAIM answered what is not its reply; trying again later"), .schedule(.claim, after: claimEvery)])
        #expect(machine.malformed == 1)
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.claim(cursor: "7-0", count: 100)])
        #expect(machine.on { $0.claimReplied(.noGroup, into: &$1) } == [.schedule(.claim, after: claimEvery)])
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.claim(cursor: "0-0", count: 100)])
    }

    @Test("with no room nothing is claimed; the next look comes after the interval")
    func noRoomNoClaim() {
        var machine = running(capacity: 1)
        machine.hold(["1-1"])
        _ = machine.on { $0.claimReplied(.entries(cursor: "0-0", ids: [], skipped: 0), into: &$1) }
        #expect(machine.on { $0.fired(.claim, into: &$1) } == [.schedule(.claim, after: claimEvery)])
    }

    // MARK: refusals

    @Test("a refused command is said once, and once more when it is accepted again", arguments: ["XCLAIM", "XAUTOCLAIM"])
    func refusalsSaidOnce(command: String) {
        var machine = running()
        func reply(_ reply: StreamQueueMachine.CommandReply) -> [Action] {
            let actions: [Action]
            if command == "XCLAIM" {
                actions = machine.on { $0.renewReplied(reply, into: &$1) }
            } else {
                let claim: StreamQueueMachine.ClaimReply = switch reply {
                case .accepted: .entries(cursor: "0-0", ids: [], skipped: 0)
                case .refused(let text): .refused(text)
                case .failed: .failed
                }
                actions = machine.on { $0.claimReplied(claim, into: &$1) }
                _ = machine.on { $0.fired(.claim, into: &$1) }
            }
            return actions.filter { if case .log = $0 { true } else { false } }
        }
        #expect(reply(.accepted) == [])
        #expect(reply(.refused("NOPERM no permissions")) == [.log("Redis refuses \(command): NOPERM no permissions")])
        #expect(reply(.refused("NOPERM no permissions")) == [])
        #expect(reply(.failed) == [])
        #expect(reply(.accepted) == [.log("Redis takes \(command) again")])
        #expect(reply(.accepted) == [])
        #expect(reply(.refused("NOPERM again")) == [.log("Redis refuses \(command): NOPERM again")])
    }

    @Test("each command's refusal is said apart, and an unreadable claim reply counts as accepted")
    func refusalsPerCommand() {
        var machine = running()
        #expect(machine.on { $0.renewReplied(.refused("NOPERM"), into: &$1) } == [.log("Redis refuses XCLAIM: NOPERM")])
        #expect(machine.on { $0.claimReplied(.refused("NOPERM"), into: &$1) }
            == [.log("Redis refuses XAUTOCLAIM: NOPERM"), .schedule(.claim, after: claimEvery)])
        _ = machine.on { $0.fired(.claim, into: &$1) }
        #expect(machine.on { $0.claimReplied(.unreadable, into: &$1) }
            == [.log("XAUTOCLAIM answered what is not its reply; trying again later"), .log("Redis takes XAUTOCLAIM again"),
                .schedule(.claim, after: claimEvery)])
        #expect(machine.on { $0.renewReplied(.refused("NOPERM"), into: &$1) } == [])
    }
}
