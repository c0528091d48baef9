import EventLoop
import Foundation
import Locking
import Testing
import TestSupport
@testable import Redis

/// Against a real redis-server each test starts (TestSupport's RedisServer),
/// one test at a time: they time reconnects, and the machine has 2 cores.
@Suite("Redis connection against redis-server", .serialized)
struct RedisConnectionTests {
    static func tcpURL(_ server: RedisServer, userinfo: String = "", database: Int = 0) throws -> RedisURL {
        try RedisURL(parsing: "redis://\(userinfo)127.0.0.1:\(server.port)/\(database)")
    }

    @Test("SET, GET, INCR, LPUSH and LRANGE round-trip over TCP")
    func basics() throws {
        let server = try RedisServer()
        let client = try RedisTestClient(url: Self.tcpURL(server))
        defer { client.close() }
        #expect(client.run("SET", "greeting", "hello") == .success(.status("OK")))
        #expect(client.run("GET", "greeting") == .success(.bulkString("hello")))
        #expect(client.run("GET", "missing") == .success(.null))
        #expect(client.run("INCR", "counter") == .success(.integer(1)))
        #expect(client.run("INCR", "counter") == .success(.integer(2)))
        #expect(client.run("LPUSH", "list", "a", "b", "c") == .success(.integer(3)))
        #expect(client.run("LRANGE", "list", "0", "-1") == .success(.array([.bulkString("c"), .bulkString("b"), .bulkString("a")])))
        #expect(client.run("INCR", "greeting") == .failure(.serverError("ERR value is not an integer or out of range")))
        #expect(client.run("NOSUCHCOMMAND") == .failure(.serverError("ERR unknown command 'NOSUCHCOMMAND', with args beginning with: ")))
        #expect(client.events == [.connected])
        #expect(client.violations.isEmpty)
    }

    @Test("a unix socket with requirepass and a database: AUTH and SELECT before any command")
    func unixSocketWithPasswordAndDatabase() throws {
        let server = try RedisServer(.init(password: "s3cret:/@?"))
        let url = try RedisURL(parsing: "unix://:s3cret%3A%2F%40%3F@\(server.unixSocketPath)?db=3")
        let client = try RedisTestClient(url: url)
        defer { client.close() }
        #expect(client.run("SET", "where", "db3") == .success(.status("OK")))
        #expect(client.run("CLIENT", "INFO").value?.string?.contains(" db=3 ") == true)
        // Database 0 has no such key.
        let other = try RedisTestClient(url: RedisURL(parsing: "redis://:s3cret%3A%2F%40%3F@127.0.0.1:\(server.port)"))
        defer { other.close() }
        #expect(other.run("GET", "where") == .success(.null))
        #expect(other.run("SELECT", "3") == .success(.status("OK")))
        #expect(other.run("GET", "where") == .success(.bulkString("db3")))
    }

    @Test("an ACL user logs in with AUTH user password")
    func aclUser() throws {
        let server = try RedisServer(.init(password: "default-pw", users: [(name: "relay", password: "relay-pw")]))
        let client = try RedisTestClient(url: Self.tcpURL(server, userinfo: "relay:relay-pw@"))
        defer { client.close() }
        #expect(client.run("ACL", "WHOAMI") == .success(.bulkString("relay")))
        let byDefault = try RedisTestClient(url: Self.tcpURL(server, userinfo: ":default-pw@"))
        defer { byDefault.close() }
        #expect(byDefault.run("ACL", "WHOAMI") == .success(.bulkString("default")))
    }

    @Test("a wrong password fails every attempt with the server's words, backs off, and commands time out naming it")
    func wrongPassword() throws {
        let server = try RedisServer(.init(password: "right"))
        let client = try RedisTestClient(url: Self.tcpURL(server, userinfo: ":wrong@"),
                                         settings: RedisTestClient.settings(commandTimeout: .seconds(1)))
        defer { client.close() }
        let refused = RedisError.connectFailed("AUTH refused: WRONGPASS invalid username-password pair or user is disabled.")
        let outcome = client.run("PING")
        #expect(outcome == .failure(.timedOut("no connection to Redis within 1.0 seconds; last failure: \(refused.reason)")))
        #expect(eventually { client.events.count >= 3 })
        for event in client.events.prefix(3) {
            guard case .connectFailed(let error, let retryIn) = event else {
                Issue.record("\(event)")
                continue
            }
            #expect(error == refused)
            #expect(retryIn <= .milliseconds(200))
        }
        #expect(!client.events.contains(.connected))
    }

    @Test("SELECT of a database the server does not have fails the attempt")
    func missingDatabase() throws {
        let server = try RedisServer()
        let client = try RedisTestClient(url: Self.tcpURL(server, database: 99))
        defer { client.close() }
        #expect(eventually { !client.events.isEmpty })
        guard case .connectFailed(let error, _) = client.events.first else {
            Issue.record("\(client.events)")
            return
        }
        #expect(error == .connectFailed("SELECT refused: ERR DB index is out of range"))
    }

    @Test("a stream: XADD, a consumer group, XREADGROUP, XACK and XPENDING")
    func streams() throws {
        let server = try RedisServer()
        let client = try RedisTestClient(url: Self.tcpURL(server))
        defer { client.close() }
        #expect(client.run("XGROUP", "CREATE", "pushes", "relays", "$", "MKSTREAM") == .success(.status("OK")))
        let id = try #require(client.run("XADD", "pushes", "*", "token", "ab12", "payload", "{}").value?.string)
        let read = client.run("XREADGROUP", "GROUP", "relays", "relay-1", "COUNT", "10", "STREAMS", "pushes", ">")
        #expect(read == .success(.array([.array([
            .bulkString("pushes"),
            .array([.array([.bulkString(id), .array([.bulkString("token"), .bulkString("ab12"), .bulkString("payload"), .bulkString("{}")])])]),
        ])])))
        #expect(client.run("XPENDING", "pushes", "relays").value?.array?.first == .integer(1))
        #expect(client.run("XACK", "pushes", "relays", id) == .success(.integer(1)))
        #expect(client.run("XPENDING", "pushes", "relays").value?.array?.first == .integer(0))
        // Nothing new: a nil reply.
        #expect(client.run("XREADGROUP", "GROUP", "relays", "relay-1", "STREAMS", "pushes", ">") == .success(.null))
    }

    @Test("values are binary-safe: NUL bytes, CR LF, and a mebibyte of random bytes")
    func binaryValues() throws {
        let server = try RedisServer()
        let client = try RedisTestClient(url: Self.tcpURL(server))
        defer { client.close() }
        var generator = SeededGenerator(seed: 21)
        let big = generator.bytes(1 << 20)
        let small: [UInt8] = [0, 13, 10, 0, 0xFF, UInt8(ascii: "*"), 0]
        let key: [UInt8] = [UInt8(ascii: "k"), 0, 13, 10]
        let outcomes = try #require(client.send([
            RedisCommand([Array("SET".utf8), key, small]),
            RedisCommand([Array("GET".utf8), key]),
            RedisCommand("SET", ["big"], [big]),
            RedisCommand("GET", "big"),
            RedisCommand("STRLEN", "big"),
        ]))
        #expect(outcomes[0] == .success(.status("OK")))
        #expect(outcomes[1] == .success(.bulkString(small)))
        #expect(outcomes[2] == .success(.status("OK")))
        #expect(outcomes[3].value?.bytes == big)
        #expect(outcomes[4] == .success(.integer(1 << 20)))
    }

    @Test("10,000 pipelined INCRs complete in order, each once, none inside send")
    func pipelinedIncrements() throws {
        let server = try RedisServer()
        var settings = RedisTestClient.settings()
        settings.maxPendingCommands = 10_000
        let client = try RedisTestClient(url: Self.tcpURL(server), settings: settings)
        defer { client.close() }
        #expect(client.waitUntilConnected())
        let completed = try #require(client.sendInOrder(Array(repeating: RedisCommand("INCR", "n"), count: 10_000)))
        #expect(completed.map(\.index) == Array(0..<10_000))
        #expect(completed.map(\.outcome) == (1...10_000).map { .success(.integer(Int64($0))) })
        #expect(client.violations.isEmpty)
    }

    @Test("beyond maxPendingCommands a send fails at once with tooManyQueued, on a later pass")
    func tooManyQueued() throws {
        let server = try RedisServer()
        var settings = RedisTestClient.settings()
        settings.maxPendingCommands = 100
        let client = try RedisTestClient(url: Self.tcpURL(server), settings: settings)
        defer { client.close() }
        #expect(client.waitUntilConnected())
        let outcomes = try #require(client.send(Array(repeating: RedisCommand("PING"), count: 150)))
        #expect(outcomes.prefix(100).allSatisfy { $0 == .success(.status("PONG")) })
        #expect(outcomes.suffix(50).allSatisfy { $0 == .failure(.tooManyQueued(limit: 100)) })
        #expect(client.violations.isEmpty)
    }

    @Test("killing redis-server fails the command in flight as lost; restarted on the same port, the connection comes back")
    func serverKilledAndRestarted() throws {
        let server = try RedisServer()
        let client = try RedisTestClient(url: Self.tcpURL(server), settings: RedisTestClient.settings(commandTimeout: .seconds(20)))
        defer { client.close() }
        #expect(client.run("SET", "before", "1") == .success(.status("OK")))
        // BLPOP on an empty list waits: a command certainly in flight.
        let blocked = Locked<RedisTestClient.Outcome?>(nil)
        let blockedCommand = RedisCommand("BLPOP", "empty", "0")
        Thread.detachNewThread { blocked.withLock { $0 = client.run(blockedCommand) } }
        #expect(eventually { blockedClients(server) == 1 })
        server.kill()
        #expect(eventually(timeout: .seconds(10)) { blocked.withLock { $0 } != nil })
        let lostOutcome = blocked.withLock { $0 }
        guard case .failure(.connectionLost(let reason)) = lostOutcome else {
            Issue.record("BLPOP ended with \(String(describing: lostOutcome))")
            return
        }
        #expect(reason == "server closed the connection" || reason.hasPrefix("read failed"))
        #expect(eventually { client.events.contains { if case .lost(.connectionLost, _) = $0 { true } else { false } } })
        // Down: attempts fail and are retried.
        #expect(eventually { client.events.contains { if case .connectFailed = $0 { true } else { false } } })
        try server.restart()
        #expect(client.waitUntilConnected(times: 2))
        // A fresh server without persistence: the old key is gone, the connection works.
        #expect(client.run("GET", "before") == .success(.null))
        #expect(client.run("SET", "after", "2") == .success(.status("OK")))
        #expect(client.violations.isEmpty)
    }

    @Test("with the append-only file, what was acknowledged survives SIGKILL and a restart")
    func appendOnlySurvivesKill() throws {
        let server = try RedisServer(.init(appendOnly: true))
        let client = try RedisTestClient(url: Self.tcpURL(server))
        defer { client.close() }
        let outcomes = try #require(client.send((0..<100).map { RedisCommand("RPUSH", "kept", "\($0)") }))
        #expect(outcomes.last == .success(.integer(100)))
        server.kill()
        try server.restart()
        #expect(client.waitUntilConnected(times: 2))
        #expect(client.run("LLEN", "kept") == .success(.integer(100)))
    }

    @Test("a refused connection is retried with a backoff, and commands time out naming the refusal")
    func connectionRefused() throws {
        let port = try HTTPTestServer.closedPort()
        let client = try RedisTestClient(url: RedisURL(parsing: "redis://127.0.0.1:\(port)"),
                                         settings: RedisTestClient.settings(commandTimeout: .milliseconds(300)))
        defer { client.close() }
        let outcome = client.run("PING")
        guard case .failure(.timedOut(let reason)) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(reason.hasPrefix("no connection to Redis within 0.3 seconds; last failure: 127.0.0.1:\(port): "))
        #expect(reason.contains("Connection refused"))
        #expect(eventually { client.events.count >= 2 })
        #expect(client.state != .ready)
    }

    @Test("close fails what is pending with closed and reports closed last")
    func closeFailsPending() throws {
        let server = try RedisServer()
        let client = try RedisTestClient(url: Self.tcpURL(server), settings: RedisTestClient.settings(commandTimeout: .seconds(20)))
        #expect(client.waitUntilConnected())
        let blocked = Locked<RedisTestClient.Outcome?>(nil)
        let blockedCommand = RedisCommand("BLPOP", "empty", "0")
        Thread.detachNewThread { blocked.withLock { $0 = client.run(blockedCommand) } }
        #expect(eventually { blockedClients(server) == 1 })
        client.close()
        #expect(eventually { blocked.withLock { $0 } != nil })
        #expect(blocked.withLock { $0 } == .failure(.closed))
        #expect(client.events == [.connected, .closed])
    }

    @Test("the login commands follow the URL: AUTH with or without a user, SELECT only for another database")
    func handshakeCommands() throws {
        func wire(_ url: String) throws -> [[UInt8]] {
            try RedisConnection.handshakeCommands(for: RedisURL(parsing: url)).map(\.encoded)
        }
        #expect(try wire("redis://h").isEmpty)
        #expect(try wire("redis://h/0").isEmpty)
        #expect(try wire("redis://:p%00w@h/2") == [
            RedisCommand([Array("AUTH".utf8), [UInt8(ascii: "p"), 0, UInt8(ascii: "w")]]).encoded, RedisCommand("SELECT", "2").encoded,
        ])
        #expect(try wire("unix://relay:pw@/r.sock") == [RedisCommand("AUTH", "relay", "pw").encoded])
    }
}

/// Clients the server has waiting in a blocking command (INFO clients).
private func blockedClients(_ server: RedisServer) -> Int {
    (try? server.info("blocked_clients")).flatMap { Int($0) } ?? -1
}
