import Dispatch
import Fleet
import Foundation
import Locking
import Observability
import Redis
import Testing
import TestSupport

@Suite("Redis link: one connection on a thread of its own", .serialized)
struct RedisLinkTests {
    @Test("commands sent from several threads all get their replies, on the link's thread")
    func commandsFromManyThreads() throws {
        let server = try RedisServer()
        let link = try RedisLink(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), name: "commands")
        defer { link.close() }
        let onLinkThread = Locked(0)
        let replies = Locked(0)
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<250 {
                group.enter()
                link.send(RedisCommand("INCR", "counter")) { reply in
                    if link.loop.isOnLoopThread { onLinkThread.withLock { $0 += 1 } }
                    if case .success(.integer) = reply { replies.withLock { $0 += 1 } }
                    group.leave()
                }
            }
        }
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(replies.withLock { $0 } == 2000)
        #expect(onLinkThread.withLock { $0 } == 2000)
        #expect(link.run("GET", "counter") == .success(.bulkString("2000")))
        #expect(link.isConnected)
        #expect(link.connectCount == 1)
    }

    @Test("with Redis down a command fails within its timeout, and the link comes back when Redis does")
    func reconnectsAfterRedisReturns() throws {
        let server = try RedisServer()
        var settings = RedisConnectionSettings()
        settings.commandTimeout = .milliseconds(500)
        settings.reconnectCap = .milliseconds(200)
        let lines = LoggedLines()
        let url = try RedisURL(parsing: "redis://127.0.0.1:\(server.port)")
        let log = RedisLinkLog(name: "commands", url: url, logger: lines.logger)
        let link = try RedisLink(url: url, name: "commands", settings: settings) { log.handle($0) }
        defer { link.close() }
        #expect(link.run("SET", "k", "v") == .success(.status("OK")))
        server.kill()
        let failed = link.run("GET", "k")
        #expect(failed != nil)
        if case .success = failed { Issue.record("a command succeeded with Redis killed: \(String(describing: failed))") }
        #expect(!link.isConnected)
        try server.restart()
        #expect(eventually(timeout: .seconds(10)) { link.isConnected })
        #expect(link.run("PING") == .success(.status("PONG")))
        let texts = lines.messages
        #expect(texts.first?.hasPrefix("redis (commands): connected to redis://127.0.0.1:") == true)
        #expect(texts.contains { $0.hasPrefix("redis (commands): Redis: ") && $0.contains("the relay goes on without it") })
        #expect(texts.last?.hasSuffix(" again") == true)
        #expect(link.failureCount >= 1)
    }

    @Test("the link log writes one line when Redis goes, then one a minute while it stays away")
    func linkLogRepeatsOncePerMinute() throws {
        let lines = LoggedLines()
        let url = try RedisURL(parsing: "redis://:secret@127.0.0.1:1")
        let log = RedisLinkLog(name: "reads", url: url, logger: lines.logger)
        let start = ContinuousClock.now
        let failure = RedisConnectionEvent.connectFailed(.connectFailed("refused"), retryIn: .seconds(1))
        log.handle(failure, now: start)
        for second in 1...59 { log.handle(failure, now: start + .seconds(second)) }
        #expect(lines.all.count == 1)
        log.handle(failure, now: start + .seconds(61))
        #expect(lines.all.count == 2)
        #expect(lines.all[1].message.contains("still unreachable after 60 more attempts"))
        log.handle(.connected, now: start + .seconds(62))
        #expect(lines.all.count == 3)
        #expect(lines.all[2] == LoggedLines.Line(level: "info", message: "redis (reads): connected to \(url) again"))
        #expect(lines.all.allSatisfy { $0.message.contains("secret") == false })
    }
}
