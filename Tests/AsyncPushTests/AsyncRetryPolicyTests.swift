import APNsCore
import Delivery
import Testing

@testable import AsyncPush
import TestSupport

/// The asynchronous `/api/push`'s decision after a try: done or retried,
/// from the outcome, the tries so far, the expiration and the time alone.
@Suite("The asynchronous retry policy")
struct AsyncRetryPolicyTests {
    static let now: Int64 = 1_800_000_000_000
    static let policy = AsyncRetryPolicy(maxTries: 5)

    static func apns(_ status: Int, _ reason: APNsReason? = nil) -> DeliveryOutcome {
        .apns(status: status, reason: reason, apnsID: nil)
    }

    /// What APNs' answer means for the policy (`APNsPush.result(of:)`).
    static func result(_ outcome: DeliveryOutcome) -> PushResult {
        APNsPush.result(of: APNsDelivery(outcome: outcome))
    }

    static let outcomeCases: [(outcome: DeliveryOutcome, decision: AsyncRetryDecision)] = [
        (apns(200), .done(.accepted)),
        (apns(400, .badDeviceToken), .done(.refused)),
        (apns(400, .payloadTooLarge), .done(.refused)),
        (apns(403, .badCertificate), .done(.refused)),
        (apns(404, .badPath), .done(.refused)),
        (apns(410, .unregistered), .done(.refused)),
        (apns(413, .payloadTooLarge), .done(.refused)),
        (apns(429, .tooManyRequests), .retry(at: now + 500)),
        (apns(500, .internalServerError), .retry(at: now + 500)),
        (apns(503, .serviceUnavailable), .retry(at: now + 500)),
        (.answerTimedOut, .retry(at: now + 500)),
        (.streamFailed("reset"), .retry(at: now + 500)),
        (.connectFailed("refused"), .retry(at: now + 500)),
        (.tlsFailed("handshake"), .retry(at: now + 500)),
        (.allConnectionsDown, .retry(at: now + 500)),
        (.overloaded, .retry(at: now + 500)),
    ]

    @Test("APNs 2xx and other 4xx are final; 429, 5xx, no answer and the relay's own refusals are retried",
          arguments: outcomeCases)
    func outcomes(_ example: (outcome: DeliveryOutcome, decision: AsyncRetryDecision)) {
        var random = LowestJitter()
        let decision = Self.policy.decide(after: Self.result(example.outcome), tries: 1, expiration: nil, now: Self.now,
                                          random: &random)
        #expect(decision == example.decision)
    }

    static let boundCases: [(tries: Int, expiration: Int64?, retryAfter: Int?, decision: AsyncRetryDecision)] = [
        // No expiration: only the tries bound it; delays 0.5, 1, 2, 4 s at the lowest jitter.
        (1, nil, nil, .retry(at: now + 500)),
        (2, nil, nil, .retry(at: now + 1_000)),
        (3, nil, nil, .retry(at: now + 2_000)),
        (4, nil, nil, .retry(at: now + 4_000)),
        (5, nil, nil, .done(.triesSpent)),
        (9, nil, nil, .done(.triesSpent)),
        // apns-expiration 0: APNs' "deliver only once".
        (1, 0, nil, .done(.expired)),
        // A retry within the expiration's second runs; one past it does not.
        (1, now / 1_000, nil, .retry(at: now + 500)),
        (4, now / 1_000 + 3, nil, .done(.expired)),
        (4, now / 1_000 + 4, nil, .retry(at: now + 4_000)),
        // An expiration already past.
        (1, now / 1_000 - 1, nil, .done(.expired)),
        // A Retry-After is a floor under the backoff, never lowered by it.
        (1, nil, 30, .retry(at: now + 30_000)),
        (4, nil, 1, .retry(at: now + 4_000)),
        (1, now / 1_000 + 10, 30, .done(.expired)),
        // The tries bound the Retry-After's retry too.
        (5, nil, 30, .done(.triesSpent)),
    ]

    @Test("a retryable failure is retried until the tries are spent or the notification expires",
          arguments: boundCases)
    func bounds(_ example: (tries: Int, expiration: Int64?, retryAfter: Int?, decision: AsyncRetryDecision)) {
        var random = LowestJitter()
        let decision = Self.policy.decide(after: Self.result(Self.apns(503, .serviceUnavailable)), tries: example.tries,
                                          expiration: example.expiration, retryAfterSeconds: example.retryAfter,
                                          now: Self.now, random: &random)
        #expect(decision == example.decision)
    }

    @Test("a final outcome is final whatever the tries and the expiration")
    func finalOutcomesIgnoreBounds() {
        var random = LowestJitter()
        for tries in [1, 5, 50] {
            for expiration: Int64? in [nil, 0, Self.now / 1_000 - 100] {
                #expect(Self.policy.decide(after: Self.result(Self.apns(200)), tries: tries, expiration: expiration, now: Self.now,
                                           random: &random) == .done(.accepted))
                #expect(Self.policy.decide(after: Self.result(Self.apns(410, .unregistered)), tries: tries, expiration: expiration,
                                           now: Self.now, random: &random) == .done(.refused))
            }
        }
    }

    @Test("one try in all makes every retryable failure final")
    func singleTry() {
        var random = LowestJitter()
        let once = AsyncRetryPolicy(maxTries: 1)
        #expect(once.decide(after: Self.result(.answerTimedOut), tries: 1, expiration: nil, now: Self.now, random: &random)
            == .done(.triesSpent))
    }

    static let ceilingCases: [(tries: Int, ceiling: Int64)] = [
        (1, 1_000), (2, 2_000), (3, 4_000), (6, 32_000), (7, 60_000), (8, 60_000), (100, 60_000), (Int.max, 60_000),
    ]

    @Test("the backoff's ceiling doubles from the base and stops at the cap, without overflow",
          arguments: ceilingCases)
    func ceiling(_ example: (tries: Int, ceiling: Int64)) {
        #expect(Self.policy.ceilingDelay(afterFailedTries: example.tries) == example.ceiling)
    }

    @Test("the jittered delay lies between half its ceiling and the ceiling, and spreads over that range")
    func jitterRange() {
        var random = SeededGenerator(seed: 21)
        for tries in 1...10 {
            let ceiling = Self.policy.ceilingDelay(afterFailedTries: tries)
            var seen = Set<Int64>()
            for _ in 0..<200 {
                let delay = Self.policy.jitteredDelay(afterFailedTries: tries, random: &random)
                #expect(delay >= ceiling - ceiling / 2 && delay <= ceiling)
                seen.insert(delay)
            }
            #expect(seen.count > 50, "200 draws over \(ceiling / 2 + 1) values should rarely repeat")
        }
    }
}
