import FeedbackHook
import Fleet
import Foundation
import Locking
import Observability
import Redis
import Testing
import TestSupport

/// The hook's posts through the fleet's stream: two instances on one real
/// redis-server, each with its own hook to one HTTP server the test runs.
@Suite("Hook outbox: failed-push logs posted by any instance, at least once", .serialized)
struct FleetHookOutboxTests {
    static func fleet(_ server: RedisServer, name: String, claimIdle: Duration = .milliseconds(600)) throws -> Fleet {
        try Fleet(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), instance: name, claimIdle: claimIdle,
                  logger: LoggedLines().logger)
    }

    static func hook(port: UInt16, maxAttempts: Int = 1) throws -> FeedbackHook {
        try FeedbackHook(url: "http://127.0.0.1:\(port)/hook", headers: [], queueCapacity: 100,
                         timeout: .seconds(5), maxAttempts: maxAttempts, backoff: .milliseconds(10),
                         logger: LoggedLines().logger)
    }

    static func body(_ number: Int) -> [UInt8] {
        Array(#"{"type":"failed-push","platform":"ios","token":"t\#(number)","error":"Unregistered"}"#.utf8)
    }

    @Test("logs posted through one instance are posted once each, by whichever instance reads them, and leave the stream")
    func eachLogPostedOnce() throws {
        let redis = try RedisServer()
        let receiver = try HTTPTestServer { _ in .status(200) }
        defer { receiver.stop() }
        let one = try Self.fleet(redis, name: "one"), two = try Self.fleet(redis, name: "two")
        defer { one.close(); two.close() }
        let first = FleetHookOutbox(fleet: one, hook: try Self.hook(port: receiver.port), capacity: 1_000,
                                    logger: LoggedLines().logger)
        let second = FleetHookOutbox(fleet: two, hook: try Self.hook(port: receiver.port), capacity: 1_000,
                                    logger: LoggedLines().logger)
        first.start()
        second.start()
        for number in 0..<300 { first.post(Self.body(number)) }
        #expect(eventually(timeout: .seconds(20)) { receiver.requests.count >= 300 })
        Thread.sleep(forTimeInterval: 0.3)
        let bodies = receiver.requests.map(\.body)
        #expect(bodies.count == 300)
        #expect(Set(bodies) == Set((0..<300).map(Self.body)))
        #expect(eventually(timeout: .seconds(5)) { one.commands.run("XLEN", FleetKeys.hookStream) == .success(.integer(0)) })
        #expect(first.unwritten == 0 && first.dropped == 0)
    }

    @Test("a log the hook could not take is released and posted again after the claim time, once the hook answers")
    func notPostedIsPostedLater() throws {
        let redis = try RedisServer()
        // 503 for the first three posts, then 200.
        let calls = Locked(0)
        let receiver = try HTTPTestServer { _ in
            calls.withLock { calls in
                calls += 1
                return calls <= 3 ? .status(503) : .status(200)
            }
        }
        defer { receiver.stop() }
        let fleet = try Self.fleet(redis, name: "solo", claimIdle: .milliseconds(300))
        defer { fleet.close() }
        let outbox = FleetHookOutbox(fleet: fleet, hook: try Self.hook(port: receiver.port), capacity: 100,
                                     logger: LoggedLines().logger)
        outbox.start()
        for number in 0..<3 { outbox.post(Self.body(number)) }
        #expect(eventually(timeout: .seconds(15)) { receiver.requests.count >= 6 })
        Thread.sleep(forTimeInterval: 0.5)
        let bodies = receiver.requests.map(\.body)
        #expect(bodies.count == 6)
        // The three refused with 503 first, then each posted again, once.
        #expect(Set(bodies.prefix(3)) == Set((0..<3).map(Self.body)))
        #expect(Set(bodies.suffix(3)) == Set((0..<3).map(Self.body)))
        #expect(outbox.claimed >= 3)
        #expect(eventually(timeout: .seconds(5)) { fleet.commands.run("XLEN", FleetKeys.hookStream) == .success(.integer(0)) })
    }

    @Test("a log the hook refuses for good (a 4xx) is not posted again")
    func refusedIsFinished() throws {
        let redis = try RedisServer()
        let receiver = try HTTPTestServer { _ in .status(400) }
        defer { receiver.stop() }
        let fleet = try Self.fleet(redis, name: "solo", claimIdle: .milliseconds(300))
        defer { fleet.close() }
        let outbox = FleetHookOutbox(fleet: fleet, hook: try Self.hook(port: receiver.port, maxAttempts: 3), capacity: 100,
                                     logger: LoggedLines().logger)
        outbox.start()
        outbox.post(Self.body(1))
        #expect(eventually(timeout: .seconds(5)) { receiver.requests.count == 1 })
        Thread.sleep(forTimeInterval: 1.5)
        #expect(receiver.requests.count == 1)
        #expect(fleet.commands.run("XLEN", FleetKeys.hookStream) == .success(.integer(0)))
    }

    @Test("with Redis down, logs wait in the instance (past the bound: dropped and counted) and are written when it is back")
    func waitsForRedis() throws {
        let redis = try RedisServer()
        let receiver = try HTTPTestServer { _ in .status(200) }
        defer { receiver.stop() }
        let fleet = try Self.fleet(redis, name: "solo")
        defer { fleet.close() }
        let lines = LoggedLines()
        let outbox = FleetHookOutbox(fleet: fleet, hook: try Self.hook(port: receiver.port), capacity: 5,
                                     logger: lines.logger)
        outbox.start()
        #expect(eventually(timeout: .seconds(5)) { fleet.commands.isConnected })
        redis.kill()
        for number in 0..<7 { outbox.post(Self.body(number)) }
        #expect(outbox.dropped == 2)
        #expect(outbox.unwritten == 5)
        #expect(eventually(timeout: .seconds(10)) { lines.messages.contains { $0.contains("cannot write to Redis") } })
        try redis.restart()
        #expect(eventually(timeout: .seconds(20)) { receiver.requests.count == 5 })
        #expect(Set(receiver.requests.map(\.body)) == Set((0..<5).map(Self.body)))
        #expect(outbox.unwritten == 0)
        #expect(lines.messages.contains("feedback hook: writing to Redis again"))
        #expect(lines.messages.allSatisfy { !$0.contains("failed-push") })
    }
}
