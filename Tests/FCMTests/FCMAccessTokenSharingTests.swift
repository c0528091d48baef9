// The account's machine with a fleet: the fleet's token ends a fetch
// without a request, and the token being replaced is named to the fleet.

import FCM
import FCMCore
import Locking
import TestSupport
import Testing

/// A fleet that answers every wish with its token, or lets the instance
/// fetch when it has none; records what it was asked.
private final class FakeFleet: FCMAccessTokenSharing {
    let token = Locked<(String, Int)?>(nil)
    let replaced = Locked<[String?]>([])

    func obtain(_ account: FCMServiceAccount, replacing: String?, now: Int,
                fetch: @escaping @Sendable (@escaping @Sendable (TokenFetchResult) -> Void) -> Void,
                completion: @escaping @Sendable (TokenFetchResult) -> Void) {
        replaced.withLock { $0.append(replacing) }
        if let (token, keptUntil) = token.withLock({ $0 }) {
            completion(.shared(token: token, keptUntil: keptUntil))
        } else {
            fetch { completion($0) }
        }
    }
}

@Suite("FCM access tokens with a fleet")
struct FCMAccessTokenSharingTests {
    @Test("the fleet's token ends the fetch without a request, kept until the fleet's keep-until, never logged")
    func fleetTokenTaken() throws {
        let fleet = FakeFleet()
        fleet.token.withLock { $0 = ("ya29.fleet", 1_700_001_000) }
        let harness = try AccessTokenHarness(sharing: fleet)
        let account = try testServiceAccount()
        harness.run { harness in
            for index in 0..<5 { harness.want(account, as: "send \(index)") }
        }
        // The fleet answers from another thread: the hand-out comes back to the loop.
        let (results, fetches, atHand, expired, lines) = harness.run { harness in
            (harness.results, harness.fetchCount, harness.tokens.token(for: account),
             { harness.now = 1_700_001_000; defer { harness.now = 1_700_000_000 }; return harness.tokens.token(for: account) }(),
             harness.logLines)
        }
        #expect(results.count == 5 && results.allSatisfy { $0.1 == .token("ya29.fleet") })
        #expect(fetches == 0)
        #expect(atHand == .token("ya29.fleet"))
        #expect(expired == nil)
        #expect(lines.count == 1 && lines.allSatisfy { $0.contains("from the fleet") && !$0.contains("ya29") })
        #expect(fleet.replaced.withLock { $0 } == [nil])
    }

    @Test("without a fleet token the instance fetches; FCM's rejection names the rejected token to the fleet")
    func rejectedTokenNamed() throws {
        let fleet = FakeFleet()
        let harness = try AccessTokenHarness(sharing: fleet)
        let account = try testServiceAccount()
        harness.run { harness in harness.want(account, as: "first") }
        harness.run { harness in
            harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.own"), retryAfterSeconds: nil))
        }
        let first = harness.run { harness in harness.results.first?.1 }
        #expect(first == .token("ya29.own"))
        harness.run { harness in
            harness.now += 60
            harness.tokens.rejected(token: "ya29.own", for: account)
        }
        harness.run { _ in }
        #expect(fleet.replaced.withLock { $0 } == [nil, "ya29.own"])
        #expect(harness.run { $0.fetchCount } == 2)
    }
}
