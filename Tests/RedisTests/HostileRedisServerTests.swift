import Testing
import TestSupport
@testable import Redis

/// A server that is not Redis, or a broken one: the connection says what is
/// wrong in one error, fails the command with it, never crashes or hangs,
/// keeps its memory within the reply limits, and tries again.
@Suite("Redis connection against a hostile server", .serialized)
struct HostileRedisServerTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Sends PING to a fake server running `script`; returns the outcome,
    /// the client and the server for further checks.
    static func ping(_ script: FakeRedisServer.Script, commandTimeout: Duration = .seconds(5),
                     limits: RedisReplyLimits = .default) throws -> (RedisTestClient.Outcome, RedisTestClient, FakeRedisServer) {
        let server = try FakeRedisServer(script)
        var settings = RedisTestClient.settings(commandTimeout: commandTimeout)
        settings.replyLimits = limits
        let client = try RedisTestClient(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), settings: settings)
        return (client.run("PING", timeout: .seconds(30)), client, server)
    }

    @Test("garbage fails the command with a protocol error naming it, drops the connection and connects again", arguments: [
        ("$-5\r\n", "Bulk string length out of range"),
        ("*99999999999\r\n", "Multi-bulk length out of range"),
        ("!OK\r\n", "Protocol error, got \"!\" as reply type byte"),
        ("\u{0}\u{1}\u{2}", "Protocol error, got \"\\x00\" as reply type byte"),
        (":12ab\r\n", "Bad integer value"),
        (String(repeating: "*1\r\n", count: 10_000), "No support for nested multi bulk replies with depth > 7"),
        ("*2147483647\r\n", "a reply of more than 1048576 elements"),
    ])
    func garbage(_ answer: String, _ reason: String) throws {
        let (outcome, client, server) = try Self.ping(.answer(Self.bytes(answer)))
        defer {
            client.close()
            server.stop()
        }
        #expect(outcome == .failure(.protocolError(reason)))
        #expect(eventually { client.events.contains { lost($0) == .protocolError(reason) } })
        // It comes back (and meets the same garbage on its next command).
        #expect(eventually { server.acceptedConnections >= 2 })
        #expect(client.run("PING") == .failure(.protocolError(reason)))
        #expect(client.violations.isEmpty)
    }

    @Test("+OK that never ends its line is refused at the byte limit, not read without end")
    func endlessLine() throws {
        let limits = RedisReplyLimits(maxBytes: 1 << 20, maxElements: 1024)
        let filler = [UInt8](repeating: UInt8(ascii: "K"), count: 65_536)
        let (outcome, client, server) = try Self.ping(.endless(prefix: Self.bytes("+OK"), filler: filler, limit: 256 << 20), limits: limits)
        defer {
            client.close()
            server.stop()
        }
        #expect(outcome == .failure(.protocolError("a reply of more than 1048576 bytes")))
        // The client closed its end: the server's writes stop long before its 256 MiB.
        #expect(eventually { server.openConnections == 0 || server.acceptedConnections >= 2 })
        #expect(server.writtenBytes < 64 << 20)
    }

    @Test("an error reply of a mebibyte fails the command with its text capped to one line; the connection stays")
    func megabyteError() throws {
        let text = "ERR " + String(repeating: "x", count: 1 << 20)
        let (outcome, client, server) = try Self.ping(.answer(Self.bytes("-\(text)\r\n")))
        defer {
            client.close()
            server.stop()
        }
        guard case .failure(.serverError(let shown)) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(shown.hasPrefix("ERR xxx"))
        #expect(shown.utf8.count <= RedisError.maxServerErrorBytes + 3)
        #expect(client.run("PING") == outcome)
        #expect(client.events == [.connected])
        #expect(server.acceptedConnections == 1)
    }

    @Test("a server that answers nothing: the command times out and the connection is dropped")
    func silence() throws {
        let (outcome, client, server) = try Self.ping(.silent, commandTimeout: .milliseconds(300))
        defer {
            client.close()
            server.stop()
        }
        #expect(outcome == .failure(.timedOut("no reply within 0.3 seconds")))
        #expect(eventually { client.events.count >= 2 })
        #expect(client.events[1] == .lost(.connectionLost("dropped after a command got no reply within 0.3 seconds"),
                                          retryIn: retryIn(client.events[1])))
        #expect(eventually { server.acceptedConnections >= 2 })
    }

    @Test("a server that closes in the middle of a reply: the command fails as lost")
    func closesMidReply() throws {
        let (outcome, client, server) = try Self.ping(.closeAfter(Self.bytes("$10\r\nhel")))
        defer {
            client.close()
            server.stop()
        }
        #expect(outcome == .failure(.connectionLost("server closed the connection")))
        #expect(eventually { server.acceptedConnections >= 2 })
    }

    @Test("a server that accepts and never speaks, while logging in: the connect timeout ends each attempt")
    func silentLogin() throws {
        let server = try FakeRedisServer(.silent)
        defer { server.stop() }
        var settings = RedisTestClient.settings(commandTimeout: .seconds(5))
        settings.connectTimeout = .milliseconds(200)
        let client = try RedisTestClient(url: RedisURL(parsing: "redis://:pw@127.0.0.1:\(server.port)"), settings: settings)
        defer { client.close() }
        #expect(eventually { client.events.count >= 2 })
        #expect(client.events.first == .connectFailed(.connectFailed("no answer to AUTH within 0.2 seconds"), retryIn: retryIn(client.events.first)))
    }
}

/// The error of a `lost` event.
private func lost(_ event: RedisConnectionEvent) -> RedisError? {
    if case .lost(let error, _) = event { return error }
    return nil
}

/// The backoff an event reports (jitter makes it vary), to compare the rest.
private func retryIn(_ event: RedisConnectionEvent?) -> Duration {
    switch event {
    case .connectFailed(_, let delay), .lost(_, let delay): delay
    default: .zero
    }
}
