import FeedbackHook
import Foundation
import Locking
import Observability
import Testing
import TestSupport

/// Answers from a script: the n-th request gets the n-th status, the last
/// one repeating.
private func scripted(_ statuses: [Int]) -> @Sendable (HTTPTestServer.Request) -> HTTPTestServer.Reply {
    let next = Locked(0)
    return { _ in
        let index = next.withLock { index in
            defer { index += 1 }
            return min(index, statuses.count - 1)
        }
        return .status(statuses[index])
    }
}

private func makeHook(port: UInt16, path: String = "/hook", headers: [(name: String, value: String)] = [],
                      queueCapacity: Int = 1_000, timeout: Duration = .seconds(5), maxAttempts: Int = 3,
                      backoff: Duration = .milliseconds(10), log: LoggedLines = LoggedLines()) throws -> FeedbackHook {
    try FeedbackHook(url: "http://127.0.0.1:\(port)\(path)", headers: headers, queueCapacity: queueCapacity,
                     timeout: timeout, maxAttempts: maxAttempts, backoff: backoff,
                     logger: Logger(level: .debug, sink: log.sink))
}

/// Time bounds widen under a sanitizer (scripts/sanitize sets
/// TOOT_RELAY_SANITIZER): everything runs several times slower there.
private let slack = ProcessInfo.processInfo.environment["TOOT_RELAY_SANITIZER", default: ""].isEmpty ? 1 : 5

private func body(_ number: Int) -> [UInt8] {
    Array(#"{"type":"failed-push","platform":"ios","token":"\#(number)","error":"Unregistered"}"#.utf8)
}

@Suite struct FeedbackHookTests {
    @Test("Each body arrives exactly once, as JSON with the configured headers, over one connection")
    func deliversEachBodyOnce() throws {
        let server = try HTTPTestServer { _ in .status(200) }
        defer { server.stop() }
        let hook = try makeHook(port: server.port,
                                headers: [(name: "X-Gorush-Token", value: "4e98"), (name: "X-Other", value: "a, b")])
        for number in 0..<50 { #expect(hook.enqueue(body(number))) }
        #expect(eventually { hook.counts.delivered == 50 })
        hook.shutdown(within: .seconds(5))
        let requests = server.requests
        #expect(requests.map(\.body) == (0..<50).map(body))
        #expect(requests.allSatisfy { request in
            request.method == "POST" && request.target == "/hook"
                && request.header("content-type") == "application/json"
                && request.header("x-gorush-token") == "4e98" && request.header("x-other") == "a, b"
                && request.header("expect") == nil
        })
        #expect(server.acceptedConnections == 1)
        #expect(hook.counts == FeedbackHookCounts(delivered: 50, retried: 0, failed: 0, dropped: 0))
    }

    @Test("Each queued body's post ends once: delivered on a 2xx, refused on a 4xx, not posted when every attempt failed or shutdown came first")
    func eachPostEndsOnce() throws {
        // Bodies 1-3 on a hook that answers 200, 400, then 503 for good.
        let server = try HTTPTestServer(reply: scripted([200, 400, 503]))
        defer { server.stop() }
        let ended = Locked<[Int: [FeedbackHook.PostOutcome]]>([:])
        let hook = try makeHook(port: server.port, maxAttempts: 2)
        for number in 1...3 {
            #expect(hook.enqueue(body(number)) { outcome in ended.withLock { $0[number, default: []].append(outcome) } })
        }
        #expect(eventually { ended.withLock { $0.count } == 3 })
        #expect(ended.withLock { $0 } == [1: [.delivered], 2: [.refused], 3: [.notPosted]])
        // A hook that never answers, shut down with a body in flight and
        // one queued: neither was posted.
        let silent = try HTTPTestServer { _ in .stall }
        defer { silent.stop() }
        let stalled = Locked<[FeedbackHook.PostOutcome]>([])
        let slow = try makeHook(port: silent.port, timeout: .seconds(30))
        for number in 4...5 { slow.enqueue(body(number)) { outcome in stalled.withLock { $0.append(outcome) } } }
        #expect(eventually { silent.requests.count == 1 })
        slow.shutdown(within: .milliseconds(100))
        #expect(eventually { stalled.withLock { $0.count } == 2 })
        #expect(stalled.withLock { $0 } == [.notPosted, .notPosted])
    }

    @Test("An empty body is posted as an empty body")
    func postsEmptyBody() throws {
        let server = try HTTPTestServer { _ in .status(204) }
        defer { server.stop() }
        let hook = try makeHook(port: server.port)
        hook.enqueue([])
        #expect(eventually { hook.counts.delivered == 1 })
        #expect(server.requests.map(\.body) == [[]])
        #expect(server.requests.first?.header("content-length") == "0")
    }

    @Test("A 500 and a 429 are retried, then a 200 delivers the body once")
    func retriesServerErrors() throws {
        let server = try HTTPTestServer(reply: scripted([500, 429, 200]))
        defer { server.stop() }
        let hook = try makeHook(port: server.port, maxAttempts: 5)
        hook.enqueue(body(1))
        #expect(eventually { hook.counts.delivered == 1 })
        #expect(hook.counts == FeedbackHookCounts(delivered: 1, retried: 2, failed: 0, dropped: 0))
        #expect(server.requests.map(\.body) == [body(1), body(1), body(1)])
    }

    @Test("A 4xx other than 429 fails the body at once, without a retry", arguments: [400, 401, 404, 413])
    func failsOtherClientErrors(status: Int) throws {
        let server = try HTTPTestServer(reply: scripted([status, 200]))
        defer { server.stop() }
        let log = LoggedLines()
        let hook = try makeHook(port: server.port, maxAttempts: 5, log: log)
        hook.enqueue(body(1))
        hook.enqueue(body(2))
        #expect(eventually { hook.counts.delivered == 1 })
        #expect(hook.counts == FeedbackHookCounts(delivered: 1, retried: 0, failed: 1, dropped: 0))
        #expect(server.requests.map(\.body) == [body(1), body(2)])
        #expect(log.messages == ["feedback hook http://127.0.0.1:\(server.port): a post failed after 1 attempt: HTTP \(status)"])
    }

    @Test("A 5xx on every attempt fails the body after maxAttempts")
    func givesUpAfterMaxAttempts() throws {
        let server = try HTTPTestServer { _ in .status(503) }
        defer { server.stop() }
        let hook = try makeHook(port: server.port, maxAttempts: 3)
        hook.enqueue(body(1))
        #expect(eventually { hook.counts.failed == 1 })
        #expect(hook.counts == FeedbackHookCounts(delivered: 0, retried: 2, failed: 1, dropped: 0))
        #expect(server.requests.count == 3)
    }

    @Test("With the hook down, posts are retried then failed, and enqueue stays fast and counts drops")
    func closedPortRetriesAndEnqueueStaysFast() throws {
        let port = try HTTPTestServer.closedPort()
        let log = LoggedLines()
        let hook = try makeHook(port: port, queueCapacity: 100, maxAttempts: 3, backoff: .milliseconds(20), log: log)
        hook.enqueue(body(0))
        #expect(eventually { hook.counts.failed == 1 })
        #expect(hook.counts.retried == 2)
        // The worker counts the failure, then logs it.
        #expect(eventually { log.messages.count == 1 })
        #expect(log.messages.first?.hasPrefix("feedback hook http://127.0.0.1:\(port): a post failed after 3 attempts: ") == true)

        // The worker is busy retrying its first body (long backoffs) while
        // 10,000 more arrive: only the queue's 100 fit, the rest are dropped,
        // and none of it waits on the network.
        let slow = try makeHook(port: port, queueCapacity: 100, maxAttempts: 10, backoff: .seconds(10))
        slow.enqueue(body(0))
        #expect(eventually { slow.queued == 0 })
        let clock = ContinuousClock()
        var accepted = 0
        let elapsed = clock.measure {
            for number in 1...10_000 where slow.enqueue(body(number)) { accepted += 1 }
        }
        #expect(elapsed < .milliseconds(250) * slack, "10,000 enqueues took \(elapsed)")
        #expect(accepted == 100)
        #expect(slow.counts.dropped == 9_900)
        slow.shutdown(within: .milliseconds(100))
        #expect(eventually { slow.counts.dropped == 10_000 && slow.counts.failed == 1 })
    }

    @Test("Shutdown with a stuck server returns by its deadline; the post in flight fails, the queued are dropped")
    func shutdownWithStuckServerKeepsItsDeadline() throws {
        let server = try HTTPTestServer { _ in .stall }
        defer { server.stop() }
        let hook = try makeHook(port: server.port, timeout: .seconds(30))
        for number in 0..<3 { hook.enqueue(body(number)) }
        #expect(eventually { server.requests.count == 1 })
        let clock = ContinuousClock()
        let elapsed = clock.measure { hook.shutdown(within: .milliseconds(300)) }
        #expect(elapsed < .milliseconds(300) + .milliseconds(300) * slack, "shutdown took \(elapsed)")
        #expect(elapsed >= .milliseconds(250))
        #expect(!hook.enqueue(body(9)))
        #expect(eventually { hook.counts == FeedbackHookCounts(delivered: 0, retried: 0, failed: 1, dropped: 3) })
    }

    @Test("Shutdown posts what is queued when the server answers in time, however long its limit",
          arguments: [Duration.seconds(10), .seconds(Int64.max)])
    func shutdownDrainsTheQueue(limit: Duration) throws {
        let server = try HTTPTestServer { _ in .status(200) }
        defer { server.stop() }
        let hook = try makeHook(port: server.port)
        for number in 0..<40 { hook.enqueue(body(number)) }
        hook.shutdown(within: limit)
        #expect(hook.counts.delivered == 40)
        #expect(server.requests.count == 40)
        // A second call returns at once, and nothing more is taken.
        hook.shutdown(within: .seconds(-5))
        #expect(!hook.enqueue(body(99)))
    }

    @Test("A timeout counts as a failed attempt and is retried")
    func timeoutIsRetried() throws {
        let server = try HTTPTestServer { _ in .stall }
        defer { server.stop() }
        let hook = try makeHook(port: server.port, timeout: .milliseconds(100), maxAttempts: 2)
        hook.enqueue(body(1))
        #expect(eventually { hook.counts.failed == 1 })
        #expect(hook.counts.retried == 1)
        #expect(server.requests.count == 2)
    }

    @Test("Logs name the hook by scheme, host and port: never userinfo, path, query, header or body")
    func logsHideSecrets() throws {
        let server = try HTTPTestServer { _ in .status(403) }
        defer { server.stop() }
        let log = LoggedLines()
        let hook = try FeedbackHook(
            url: "http://user:pa55word@127.0.0.1:\(server.port)/services/PATHSECRET?token=QUERYSECRET",
            headers: [(name: "X-Api-Key", value: "HEADERSECRET")], queueCapacity: 10, timeout: .seconds(5),
            maxAttempts: 1, backoff: .zero, logger: Logger(level: .debug, sink: log.sink))
        hook.enqueue(Array("BODYSECRET".utf8))
        #expect(eventually { hook.counts.failed == 1 })
        #expect(server.requests.first?.header("authorization") == "Basic dXNlcjpwYTU1d29yZA==")
        #expect(server.requests.first?.target == "/services/PATHSECRET?token=QUERYSECRET")
        #expect(hook.url.loggable == "http://127.0.0.1:\(server.port)")
        // The worker counts the failure, then logs it.
        #expect(eventually { log.messages.count == 1 })
        for secret in ["pa55word", "user", "PATHSECRET", "QUERYSECRET", "HEADERSECRET", "BODYSECRET"] {
            #expect(!log.messages.joined().contains(secret))
        }
    }

    static let badSettings: [(capacity: Int, attempts: Int, timeout: Duration, backoff: Duration, message: String)] = [
        (0, 3, .seconds(1), .zero, "feedback hook: the queue capacity must be at least 1"),
        (10, 0, .seconds(1), .zero, "feedback hook: the attempts must be at least 1"),
        (10, 3, .zero, .zero, "feedback hook: the timeout must be more than 0"),
        (10, 3, .seconds(1), .seconds(-1), "feedback hook: the backoff must not be negative"),
    ]

    @Test("Settings out of range are refused with a clear error", arguments: badSettings)
    func refusesBadSettings(row: (capacity: Int, attempts: Int, timeout: Duration, backoff: Duration, message: String)) {
        #expect {
            try FeedbackHook(url: "http://127.0.0.1:1/", headers: [], queueCapacity: row.capacity,
                             timeout: row.timeout, maxAttempts: row.attempts, backoff: row.backoff,
                             logger: Logger(level: .warning) { _ in })
        } throws: { error in String(describing: error) == row.message }
    }

    @Test("Headers given directly are held to the same rules, values never shown")
    func refusesBadDirectHeaders() {
        #expect {
            try FeedbackHook(url: "http://127.0.0.1:1/", headers: [(name: "X-Key", value: "sec\r\nX-Evil: 1")],
                             queueCapacity: 1, timeout: .seconds(1), maxAttempts: 1, backoff: .zero,
                             logger: Logger(level: .warning) { _ in })
        } throws: { error in
            String(describing: error)
                == "FEEDBACK_HOOK_HEADERS: entry 1 (X-Key): the value holds a control character (CR, LF…)"
        }
    }
}

@Suite struct FeedbackHookLifetimeTests {
    @Test("A hook released without shutdown stops its worker, which closes its connection")
    func releasedHookStopsItsWorker() throws {
        let server = try HTTPTestServer { _ in .stall }
        defer { server.stop() }
        do {
            let hook = try makeHook(port: server.port, timeout: .seconds(30))
            hook.enqueue(body(1))
            #expect(eventually { server.requests.count == 1 })
            #expect(server.openConnections == 1)
        }
        // The worker abandons the post at once; freeing its curl handles
        // closes the connection the server is stalling on.
        #expect(eventually(timeout: .seconds(3)) { server.openConnections == 0 })
    }
}
