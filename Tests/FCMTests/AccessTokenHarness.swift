// A real event loop on a thread of its own, FCMAccessTokens on it, and a
// fake fetch that records each token request and leaves its answer to the
// test: every step runs on the loop, the test waits for it.

import Dispatch
import EventLoop
import FCM
import FCMCore
import Locking
import TestSupport

/// Everything the loop owns; touched only on the loop (`run`).
final class AccessTokenHarness: @unchecked Sendable {
    struct Request {
        let endpoint: OAuthTokenEndpoint
        let body: [UInt8]
        let completion: (TokenFetchResult) -> Void
    }

    let thread: EventLoopThread
    var tokens: FCMAccessTokens!
    /// The fake clock (unix seconds).
    var now = 1_700_000_000
    /// Token requests not answered yet, oldest first.
    var pending: [Request] = []
    var fetchCount = 0
    /// When set, the fetch answers inside its own call with this.
    var answerAtOnce: TokenFetchResult?
    var logLines: [String] = []
    /// What each waiter got, by its label.
    var results: [(String, FCMAccessTokenResult)] = []

    init(sharing: (any FCMAccessTokenSharing)? = nil) throws {
        thread = try EventLoopThread(name: "fcm-tokens")
        run { harness in
            harness.tokens = FCMAccessTokens(
                loop: harness.thread.loop,
                fetch: { [unowned harness] endpoint, body, completion in
                    harness.fetchCount += 1
                    if let answer = harness.answerAtOnce {
                        completion(answer)
                    } else {
                        harness.pending.append(Request(endpoint: endpoint, body: body, completion: completion))
                    }
                },
                now: { [unowned harness] in harness.now },
                log: { [unowned harness] in harness.logLines.append($0) }, sharing: sharing)
        }
    }

    deinit { thread.stopAndJoin() }

    /// Runs `body` on the loop and returns its value once it has run.
    @discardableResult
    func run<Value: Sendable>(_ body: @escaping @Sendable (AccessTokenHarness) -> Value) -> Value {
        let done = DispatchSemaphore(value: 0)
        let value = Locked<Value?>(nil)
        // Unowned: the test holds the harness, whose last release must come
        // on the test's thread (stopping a loop thread joins it).
        thread.loop.execute { [unowned self] in
            value.withLock { $0 = body(self) }
            done.signal()
        }
        done.wait()
        return value.withLock { $0! }
    }

    /// On the loop: `account`'s token is awaited, and what it gets is recorded as `label`.
    func want(_ account: FCMServiceAccount, as label: String) {
        tokens.awaitToken(for: account) { [unowned self] result in results.append((label, result)) }
    }

    /// On the loop: answers the oldest pending request.
    func answerOldest(_ result: TokenFetchResult) {
        pending.removeFirst().completion(result)
    }

    static func tokenBody(_ token: String, expiresIn: Int = 3599) -> [UInt8] {
        Array(#"{"access_token":"\#(token)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#.utf8)
    }
}
