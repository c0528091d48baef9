@testable import FeedbackHook
import Testing

@Suite struct RetryTests {
    static let verdicts: [(result: CurlPostResult, verdict: PostVerdict)] = [
        (.answered(status: 200), .delivered),
        (.answered(status: 202), .delivered),
        (.answered(status: 204), .delivered),
        (.answered(status: 429), .retry),
        (.answered(status: 500), .retry),
        (.answered(status: 502), .retry),
        (.answered(status: 503), .retry),
        (.answered(status: 599), .retry),
        (.answered(status: 301), .fail),
        (.answered(status: 400), .fail),
        (.answered(status: 401), .fail),
        (.answered(status: 404), .fail),
        (.answered(status: 0), .fail),
        (.transportFailed("Couldn't connect to server"), .retry),
        (.transportFailed("Timeout was reached"), .retry),
        (.aborted, .fail),
    ]

    @Test("2xx delivers; 5xx, 429 and transport failures retry; everything else fails", arguments: verdicts)
    func decidesEachResult(row: (result: CurlPostResult, verdict: PostVerdict)) {
        #expect(postVerdict(for: row.result) == row.verdict)
    }

    static let delays: [(backoff: Duration, attempt: Int, delay: Duration)] = [
        (.milliseconds(100), 1, .milliseconds(100)),
        (.milliseconds(100), 2, .milliseconds(200)),
        (.milliseconds(100), 3, .milliseconds(400)),
        (.milliseconds(100), 9, .milliseconds(25_600)),
        (.milliseconds(100), 10, .seconds(30)),
        (.milliseconds(100), 1_000, .seconds(30)),
        (.seconds(1), 1, .seconds(1)),
        (.seconds(3_600), 1, .seconds(30)),
        (.seconds(Int64.max / 4), 5, .seconds(30)),
        (.zero, 5, .zero),
    ]

    @Test("The wait doubles from the backoff per retry, capped at 30 s", arguments: delays)
    func doublesUpToTheCap(row: (backoff: Duration, attempt: Int, delay: Duration)) {
        #expect(RetryPolicy(maxAttempts: 10, backoff: row.backoff).delay(afterAttempt: row.attempt) == row.delay)
    }
}
