// The process's access tokens on several event loops: the owner's machine
// on the first, a view on each, a fake fetch the test answers. A burst on
// every loop is one fetch; FCM's rejection from one loop is one refetch.

import Dispatch
import EventLoop
import FCM
import FCMCore
import Locking
import TestSupport
import Testing

/// Three loops, the owner on the first; the fetch's requests wait for the test.
final class LoopsHarness: @unchecked Sendable {
    let threads: [EventLoopThread]
    var owner: FCMAccessTokens!
    /// Touched on the owner's loop only.
    var pending: [(TokenFetchResult) -> Void] = []
    let fetchCount = Locked(0)
    let results = Locked<[String: FCMAccessTokenResult]>([:])
    let clock = Locked(1_700_000_000)

    init(loops: Int = 3) throws {
        threads = try (0..<loops).map { try EventLoopThread(name: "fcm-loop-\($0)") }
        let clock = clock
        owner = FCMAccessTokens(
            loop: threads[0].loop,
            fetch: { [unowned self] _, _, completion in
                fetchCount.withLock { $0 += 1 }
                pending.append(completion)
            },
            now: { clock.withLock { $0 } }, servedLoops: threads.map(\.loop))
    }

    deinit { for thread in threads { thread.stopAndJoin() } }

    /// Runs `body` on loop `index` with its view, and waits for it.
    func on(_ index: Int, _ body: @escaping @Sendable (FCMLoopAccessTokens) -> Void) {
        let done = DispatchSemaphore(value: 0)
        let transfer = UnsafeTransfer(owner.view(on: threads[index].loop))
        threads[index].loop.execute {
            body(transfer.value)
            done.signal()
        }
        done.wait()
    }

    /// Every loop has run what was queued on it before this, twice over
    /// (a hop to the owner and its answer back).
    func settle() {
        for _ in 0..<3 { for index in threads.indices { on(index) { _ in } } }
    }

    /// On the owner's loop: answers the oldest pending request.
    func answerOldest(_ result: TokenFetchResult) {
        let done = DispatchSemaphore(value: 0)
        threads[0].loop.execute { [unowned self] in
            pending.removeFirst()(result)
            done.signal()
        }
        done.wait()
    }

    /// What loop `index`'s view has at hand for `account`, without asking.
    func atHand(_ account: FCMServiceAccount, on index: Int) -> FCMAccessTokenResult? {
        let atHand = Locked<FCMAccessTokenResult?>(nil)
        on(index) { view in atHand.withLock { $0 = view.token(for: account) } }
        return atHand.withLock { $0 }
    }

    func want(_ account: FCMServiceAccount, on index: Int, as label: String) {
        let results = results
        on(index) { view in
            view.awaitToken(for: account) { result in
                results.withLock { $0[label] = result }
            }
        }
    }
}

@Suite("FCM access tokens shared by the process's loops")
struct FCMLoopAccessTokensTests {
    @Test("a burst on every loop is one fetch; then every loop has the token without asking")
    func burstIsOneFetch() throws {
        let harness = try LoopsHarness()
        let account = try testServiceAccount()
        for index in 0..<3 {
            for send in 0..<10 { harness.want(account, on: index, as: "\(index).\(send)") }
        }
        harness.settle()
        #expect(harness.fetchCount.withLock { $0 } == 1)
        harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.one"), retryAfterSeconds: nil))
        harness.settle()
        let results = harness.results.withLock { $0 }
        #expect(results.count == 30)
        #expect(results.values.allSatisfy { $0 == .token("ya29.one") })
        #expect((0..<3).allSatisfy { harness.atHand(account, on: $0) == .token("ya29.one") })
        #expect(harness.fetchCount.withLock { $0 } == 1)
    }

    @Test("FCM rejecting the token on several loops is one refetch, and every loop then sends the new one")
    func rejectionIsOneRefetch() throws {
        let harness = try LoopsHarness()
        let account = try testServiceAccount()
        harness.want(account, on: 1, as: "first")
        harness.settle()
        harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.one"), retryAfterSeconds: nil))
        harness.settle()
        for index in 0..<3 {
            harness.on(index) { view in view.rejected(token: "ya29.one", for: account) }
            harness.want(account, on: index, as: "resend \(index)")
        }
        harness.settle()
        #expect(harness.fetchCount.withLock { $0 } == 2)
        harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.two"), retryAfterSeconds: nil))
        harness.settle()
        let results = harness.results.withLock { $0 }
        #expect((0..<3).allSatisfy { results["resend \($0)"] == .token("ya29.two") })
        #expect((0..<3).allSatisfy { harness.atHand(account, on: $0) == .token("ya29.two") })
        #expect(harness.fetchCount.withLock { $0 } == 2)
    }

    @Test("a refused fetch holds on every loop: sends end at once, with no hop and no fetch")
    func refusalHeldEverywhere() throws {
        let harness = try LoopsHarness()
        let account = try testServiceAccount()
        harness.want(account, on: 2, as: "first")
        harness.settle()
        let refusal = Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8)
        harness.answerOldest(.answered(status: 400, body: refusal, retryAfterSeconds: nil))
        harness.settle()
        guard case .unavailable(.noAccessToken(.credentialsRejected))? = harness.results.withLock({ $0["first"] }) else {
            Issue.record("the waiting send did not end with the refusal")
            return
        }
        for index in 0..<3 {
            guard case .unavailable(.noAccessToken(.credentialsRejected))? = harness.atHand(account, on: index) else {
                Issue.record("loop \(index) does not hold the refusal")
                continue
            }
        }
        #expect(harness.fetchCount.withLock { $0 } == 1)
    }

    @Test("a dropped account leaves every loop's view; the next send fetches again")
    func keepOnlyDropsEverywhere() throws {
        let harness = try LoopsHarness()
        let account = try testServiceAccount()
        harness.want(account, on: 0, as: "first")
        harness.settle()
        harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.one"), retryAfterSeconds: nil))
        harness.settle()
        let owner = UnsafeTransfer(harness.owner!)
        harness.on(0) { _ in owner.value.keepOnly([]) }
        harness.settle()
        #expect((0..<3).allSatisfy { harness.atHand(account, on: $0) == nil })
        harness.want(account, on: 1, as: "after")
        harness.settle()
        #expect(harness.fetchCount.withLock { $0 } == 2)
    }
}
