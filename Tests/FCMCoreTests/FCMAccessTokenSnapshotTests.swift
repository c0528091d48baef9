// What an account's machine knows, as the other loops read it, and the
// fleet's token taken in place of a fetch.

import FCMCore
import Testing

@Suite("An account's access token as other loops read it")
struct FCMAccessTokenSnapshotTests {
    typealias Machine = FCMAccessTokenMachine<Int>
    typealias Action = Machine.Action
    static let start = FCMAccessTokenMachineTests.start

    @Test("the snapshot answers every moment as the machine does")
    func snapshotAnswersAsMachine() throws {
        var machine = try FCMAccessTokenMachineTests.fetching()
        #expect(machine.snapshot == .unknown)
        var actions: [Action] = []
        machine.fetchAnswered(.token(FCMAccessTokenMachineTests.googleToken), retryAfterSeconds: nil,
                              now: Self.start + 1, into: &actions)
        #expect(machine.snapshot == .token("ya29.first", fetchedAt: Self.start, until: Self.start + 3299))
        for now in [Self.start - 61, Self.start - 60, Self.start, Self.start + 3298, Self.start + 3299] {
            #expect(machine.snapshot.token(now: now) == machine.token(now: now), "at \(now - Self.start)")
        }
        var refused = try FCMAccessTokenMachineTests.fetching()
        refused.fetchFailed("no answer in time", now: Self.start + 8, into: &actions)
        guard case .held(.retryLater(5, _), Self.start + 8, Self.start + 13) = refused.snapshot else {
            Issue.record("not held: \(refused.snapshot)")
            return
        }
        for now in [Self.start + 8, Self.start + 12, Self.start + 13] {
            #expect(refused.snapshot.token(now: now) == refused.token(now: now), "at \(now - Self.start)")
        }
    }

    @Test("the fleet's token ends the fetch: every waiter gets it, kept until the fleet's keep-until")
    func adoptedToken() throws {
        var machine = try FCMAccessTokenMachineTests.fetching()
        var actions: [Action] = []
        machine.wait(2, now: Self.start, into: &actions)
        machine.adopted(token: "ya29.fleet", until: Self.start + 1_000, now: Self.start + 1, into: &actions)
        #expect(actions == [.handOut(token: "ya29.fleet", to: [1, 2])])
        #expect(machine.token(now: Self.start + 999) == .token("ya29.fleet"))
        #expect(machine.token(now: Self.start + 1_000) == nil)
        // FCM rejecting it fetches anew, as for a token of this instance's.
        actions = []
        machine.rejected(token: "ya29.fleet", now: Self.start + 500, into: &actions)
        #expect(actions == [.startFetch(issuedAt: Self.start + 500)])
    }
}
