@testable import FeedbackHook
import Testing

@Suite struct RetryTests {
    static let verdicts: [(result: CurlPostResult, verdict: PostVerdict)] =
        [200, 202, 204].map { (.answered(status: $0), .delivered) }
        + [429, 500, 502, 503, 599].map { (.answered(status: $0), .retry) }
        + [.transportFailed("Couldn't connect to server"), .transportFailed("Timeout was reached")].map { ($0, .retry) }
        + [0, 301, 400, 401, 404].map { (.answered(status: $0), .fail) } + [(.aborted, .fail)]

    @Test("2xx delivers; 5xx, 429 and transport failures retry; everything else fails", arguments: verdicts)
    func decidesEachResult(row: (result: CurlPostResult, verdict: PostVerdict)) {
        #expect(postVerdict(for: row.result) == row.verdict)
    }

    /// From 100 ms: (attempt, expected milliseconds); then other backoffs.
    static let delays: [(backoff: Duration, attempt: Int, delay: Duration)] =
        [(1, 100), (2, 200), (3, 400), (9, 25_600), (10, 30_000), (1_000, 30_000)]
            .map { (.milliseconds(100), $0.0, .milliseconds($0.1)) }
        + [(.seconds(1), 1, .seconds(1)), (.seconds(3_600), 1, .seconds(30)),
           (.seconds(Int64.max / 4), 5, .seconds(30)), (.zero, 5, .zero)]

    @Test("The wait doubles from the backoff per retry, capped at 30 s", arguments: delays)
    func doublesUpToTheCap(row: (backoff: Duration, attempt: Int, delay: Duration)) {
        #expect(RetryPolicy(maxAttempts: 10, backoff: row.backoff).delay(afterAttempt: row.attempt) == row.delay)
    }
}
