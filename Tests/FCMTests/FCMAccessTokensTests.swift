// FCMAccessTokens on a real event loop with a fake fetch: the signed
// request, one fetch for many sends, refusals held, FCM's rejections, and
// nothing secret in the log.

import Base64URL
import FCM
import FCMCore
import TestSupport
import Testing
import TLS

@Suite("FCM access tokens on an event loop")
struct FCMAccessTokensTests {
    @Test("the first send fetches with an assertion signed by the account's key, issued now")
    func signedRequest() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let (count, endpoint, request) = harness.run { harness in
            harness.want(account, as: "first")
            return (harness.pending.count, harness.pending.first?.endpoint, harness.pending.first?.body ?? [])
        }
        #expect(count == 1)
        #expect(endpoint == account.tokenEndpoint)
        let text = String(decoding: request, as: UTF8.self)
        let prefix = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
        #expect(text.hasPrefix(prefix))
        let parts = text.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let expected = ServiceAccountAssertion(account: account, issuedAt: 1_700_000_000)
        #expect(Array("\(parts[0]).\(parts[1])".utf8) == expected.signingInput)
        let verifier = try RS256Verifier(publicKeyPEM: TestCertificates.bytes(TestCertificates.serviceAccountPublicKey))
        #expect(verifier.verify(expected.signingInput, signature: try base64URLDecode(parts[2])))
    }

    @Test("sends while the token is fetched wait for the one fetch; then it is at hand without one")
    func oneFetchForManySends() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let (fetchesWhileWaiting, atHandWhileWaiting) = harness.run { harness in
            for index in 0..<20 { harness.want(account, as: "send \(index)") }
            let waiting = (harness.fetchCount, harness.tokens.token(for: account))
            harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.one"), retryAfterSeconds: nil))
            return waiting
        }
        #expect(fetchesWhileWaiting == 1)
        #expect(atHandWhileWaiting == nil)
        let (results, fetches, atHand) = harness.run { harness in
            harness.now += 3298
            return (harness.results, harness.fetchCount, harness.tokens.token(for: account))
        }
        #expect(results.map(\.0) == (0..<20).map { "send \($0)" })
        #expect(results.allSatisfy { $0.1 == .token("ya29.one") })
        #expect(fetches == 1)
        #expect(atHand == .token("ya29.one"))
        // Past keepSeconds (3599 - 300) the next send fetches again.
        let after = harness.run { harness -> (FCMAccessTokenResult?, Int) in
            harness.now += 1
            let token = harness.tokens.token(for: account)
            harness.want(account, as: "later")
            return (token, harness.fetchCount)
        }
        #expect(after.0 == nil)
        #expect(after.1 == 2)
    }

    @Test("a refused account fails every waiting send, naming it, and holds further fetches")
    func refusedAccount() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let refusal = Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8)
        let (results, held, fetches, log) = harness.run { harness in
            harness.want(account, as: "a")
            harness.want(account, as: "b")
            harness.answerOldest(.answered(status: 400, body: refusal, retryAfterSeconds: nil))
            harness.now += 4
            let held = harness.tokens.token(for: account)
            harness.want(account, as: "held")
            return (harness.results, held, harness.fetchCount, harness.logLines)
        }
        #expect(results.map(\.0) == ["a", "b", "held"])
        #expect(fetches == 1)
        guard case .unavailable(.noAccessToken(.credentialsRejected(let detail)))? = results.first?.1 else {
            Issue.record("not a credentials rejection: \(results)")
            return
        }
        #expect(results.allSatisfy { $0.1 == results[0].1 })
        #expect(held == results[0].1)
        #expect(detail.contains("firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com"))
        #expect(detail.contains("0123456789abcdef0123456789abcdef01234567"))
        #expect(log.count == 1)
        #expect(log.first?.contains("invalid_grant") == true)
        #expect(log.first?.contains("next fetch in 5 s") == true)
        let refetched = harness.run { harness -> Int in
            harness.now += 1
            harness.want(account, as: "after the hold")
            return harness.fetchCount
        }
        #expect(refetched == 2)
    }

    @Test("no answer is a 503 for the hold, with the fetch's own words")
    func noAnswer() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let results = harness.run { harness in
            harness.want(account, as: "a")
            harness.answerOldest(.failed("connect timed out"))
            return harness.results
        }
        #expect(results.first?.1 == .unavailable(.noAccessToken(.retryLater(
            seconds: 5, detail: "the token endpoint 127.0.0.1 did not answer: connect timed out"))))
    }

    @Test("a 503's Retry-After is the hold and what the sends are told")
    func retryAfterHonoured() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let (first, held) = harness.run { harness in
            harness.want(account, as: "a")
            harness.answerOldest(.answered(status: 503, body: [], retryAfterSeconds: 42))
            harness.now += 40
            return (harness.results.first?.1, harness.tokens.token(for: account))
        }
        let detail = "the token endpoint 127.0.0.1 answered 503"
        #expect(first == .unavailable(.noAccessToken(.retryLater(seconds: 42, detail: detail))))
        #expect(held == .unavailable(.noAccessToken(.retryLater(seconds: 2, detail: detail))))
    }

    @Test("FCM rejecting the token in use makes one fetch, however many sends it rejected")
    func rejectedToken() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let fetches = harness.run { harness -> Int in
            harness.answerAtOnce = .answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.one"), retryAfterSeconds: nil)
            harness.want(account, as: "first")
            harness.answerAtOnce = nil
            harness.now += 600
            for index in 0..<5 {
                harness.tokens.rejected(token: "ya29.one", for: account)
                harness.want(account, as: "resend \(index)")
            }
            harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.two"), retryAfterSeconds: nil))
            // A late rejection of the old token changes nothing.
            harness.tokens.rejected(token: "ya29.one", for: account)
            return harness.fetchCount
        }
        #expect(fetches == 2)
        let (results, atHand) = harness.run { ($0.results, $0.tokens.token(for: account)) }
        #expect(results.first?.1 == .token("ya29.one"))
        #expect(results.dropFirst().map(\.1) == Array(repeating: .token("ya29.two"), count: 5))
        #expect(atHand == .token("ya29.two"))
    }

    @Test("a key that cannot sign fails the send as rejected credentials, and nothing is posted")
    func keyCannotSign() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount(keyFile: TestCertificates.rsa1024KeyP8)
        let (results, fetches) = harness.run { harness in
            harness.want(account, as: "a")
            return (harness.results, harness.fetchCount)
        }
        #expect(fetches == 0)
        guard case .unavailable(.noAccessToken(.credentialsRejected(let detail)))? = results.first?.1 else {
            Issue.record("not a credentials rejection: \(results)")
            return
        }
        #expect(detail.contains("cannot sign its assertion"))
        #expect(!detail.contains("BEGIN"))
    }

    @Test("accounts are told apart by client_email and private_key_id")
    func accountsKeyed() throws {
        let harness = try AccessTokenHarness()
        let first = try testServiceAccount()
        let newKey = try testServiceAccount(keyID: "fedcba9876543210fedcba9876543210fedcba98")
        let (fetches, same, count, afterKeep) = harness.run { harness in
            harness.want(first, as: "a")
            harness.want(first, as: "b")
            harness.want(newKey, as: "c")
            let same = harness.tokens.account(first) === harness.tokens.account(first)
            let count = harness.tokens.accountCount
            harness.tokens.keepOnly([newKey])
            return (harness.fetchCount, same, count, harness.tokens.accountCount)
        }
        #expect(fetches == 2)
        #expect(same)
        #expect(count == 2)
        #expect(afterKeep == 1)
        // A dropped account's fetch still ends for its waiters.
        let results = harness.run { harness in
            harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.a"), retryAfterSeconds: nil))
            return harness.results
        }
        #expect(results.map(\.0) == ["a", "b"])
    }

    @Test("the log names the account and never the token, the assertion or the key")
    func logShowsNothingSecret() throws {
        let harness = try AccessTokenHarness()
        let account = try testServiceAccount()
        let (log, body) = harness.run { harness in
            harness.want(account, as: "a")
            let body = harness.pending.first?.body ?? []
            harness.answerOldest(.answered(status: 200, body: AccessTokenHarness.tokenBody("ya29.secretToken"),
                                           retryAfterSeconds: nil))
            return (harness.logLines, body)
        }
        let assertion = String(decoding: body, as: UTF8.self).split(separator: "=").last.map(String.init) ?? "?"
        let keyLine = String(decoding: account.privateKey.pem, as: UTF8.self).split(separator: "\n")[1]
        #expect(log == ["FCM access token for \(account) fetched, kept for 3299 s"])
        for line in log {
            #expect(!line.contains("ya29"))
            #expect(!line.contains(assertion))
            #expect(!line.contains(keyLine))
        }
    }
}
