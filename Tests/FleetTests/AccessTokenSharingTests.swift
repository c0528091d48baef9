import Dispatch
import FCM
import FCMCore
import Fleet
import Glibc
import Locking
import Redis
import Testing
import TestSupport

/// One instance's sharing, on its own link to a shared Redis, with a fake
/// token endpoint that counts its requests.
private struct Instance {
    let link: RedisLink
    let sharing: AccessTokenSharing
    let warnings = LoggedLines()

    init(_ server: RedisServer, name: String, commandTimeout: Duration = .seconds(5)) throws {
        var settings = RedisConnectionSettings()
        settings.commandTimeout = commandTimeout
        link = try RedisLink(url: RedisURL(parsing: "redis://127.0.0.1:\(server.port)"), name: "commands", settings: settings)
        sharing = AccessTokenSharing(link: link, instance: name, logger: warnings.logger)
    }
}

/// The token endpoint all instances would post to: each request counted,
/// answered after `delay` with `answer`.
private final class Endpoint: Sendable {
    let requests = Locked(0)
    let answer: TokenFetchResult
    let delay: Duration

    init(token: String = "ya29.fleet", expiresIn: Int = 3599, delay: Duration = .milliseconds(300)) {
        answer = .answered(status: 200, body: Array(#"{"access_token":"\#(token)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#.utf8),
                           retryAfterSeconds: nil)
        self.delay = delay
    }

    init(answer: TokenFetchResult) {
        self.answer = answer
        delay = .milliseconds(50)
    }

    func fetch(_ done: @escaping @Sendable (TokenFetchResult) -> Void) {
        requests.withLock { $0 += 1 }
        let (seconds, attoseconds) = delay.components
        let answer = answer
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) {
            done(answer)
        }
    }
}

/// `obtain` from every instance at once; what each got.
private func obtainAtOnce(_ instances: [Instance], _ endpoint: Endpoint, replacing: String? = nil) throws -> [TokenFetchResult] {
    let account = try testServiceAccount()
    let results = Locked<[Int: TokenFetchResult]>([:])
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.concurrentPerform(iterations: instances.count) { index in
        instances[index].sharing.obtain(account, replacing: replacing, now: Int(Glibc.time(nil)),
                                        fetch: { endpoint.fetch($0) }) { result in
            results.withLock { $0[index] = result }
            done.signal()
        }
    }
    for _ in instances { #expect(done.wait(timeout: .now() + .seconds(30)) == .success) }
    return results.withLock { dictionary in instances.indices.compactMap { dictionary[$0] } }
}

private let account = { () -> FCMServiceAccount in try! testServiceAccount() }()
private let key = FleetKeys.fcmAccessToken(clientEmail: account.clientEmail, privateKeyID: account.privateKeyID)

private func stored(_ link: RedisLink) -> SharedAccessToken? {
    guard case .success(let value)? = link.run("GET", key), let bytes = value.bytes,
          case .success(let shared) = SharedAccessToken.decode(bytes) else { return nil }
    return shared
}

@Suite("One FCM access token per service account across a fleet", .serialized)
struct AccessTokenSharingTests {
    @Test("three instances wanting a token at once make one request; the others take its token from Redis")
    func threeAtOnceOneFetch() throws {
        let server = try RedisServer()
        let instances = try (0..<3).map { try Instance(server, name: "relay-\($0)") }
        defer { instances.forEach { $0.link.close() } }
        let endpoint = Endpoint()
        let results = try obtainAtOnce(instances, endpoint)
        #expect(endpoint.requests.withLock { $0 } == 1)
        #expect(results.count == 3)
        #expect(results.filter { $0 == endpoint.answer }.count == 1)
        let shared = results.compactMap { result -> (String, Int)? in
            if case .shared(let token, let keptUntil) = result { return (token, keptUntil) }
            return nil
        }
        #expect(shared.count == 2)
        #expect(shared.allSatisfy { $0.0 == "ya29.fleet" })
        let now = Int(Glibc.time(nil))
        guard case .token("ya29.fleet", let keptUntil)? = stored(instances[0].link) else {
            Issue.record("no token in Redis")
            return
        }
        #expect(abs(keptUntil - (now + 3299)) <= 5)
        guard case .success(.integer(let ttl))? = instances[0].link.run("TTL", key) else {
            Issue.record("no TTL")
            return
        }
        #expect(ttl > 3290 && ttl <= 3300)
        // Asked again, every instance takes the token: no request.
        let again = try obtainAtOnce(instances, endpoint)
        #expect(again.allSatisfy { if case .shared("ya29.fleet", _) = $0 { true } else { false } })
        #expect(endpoint.requests.withLock { $0 } == 1)
        #expect(instances.allSatisfy { $0.warnings.messages.isEmpty })
    }

    @Test("the token being replaced (FCM rejected it) is not taken again: one instance fetches anew for all")
    func rejectedTokenReplacedOnce() throws {
        let server = try RedisServer()
        let instances = try (0..<3).map { try Instance(server, name: "relay-\($0)") }
        defer { instances.forEach { $0.link.close() } }
        let now = Int(Glibc.time(nil))
        _ = instances[0].link.run(RedisCommand([Array("SET".utf8), Array(key.utf8),
                                                SharedAccessToken.token("ya29.old", keptUntil: now + 3000).encoded]))
        let endpoint = Endpoint(token: "ya29.new")
        let results = try obtainAtOnce(instances, endpoint, replacing: "ya29.old")
        #expect(endpoint.requests.withLock { $0 } == 1)
        #expect(results.allSatisfy { $0 == endpoint.answer || { if case .shared("ya29.new", _) = $0 { true } else { false } }($0) })
        guard case .token("ya29.new", _)? = stored(instances[0].link) else {
            Issue.record("the new token is not in Redis")
            return
        }
    }

    @Test("a shared token whose keep is over is renewed, not taken")
    func nearlyExpiredRenewed() throws {
        let server = try RedisServer()
        let instance = try Instance(server, name: "relay-0")
        defer { instance.link.close() }
        let now = Int(Glibc.time(nil))
        _ = instance.link.run(RedisCommand([Array("SET".utf8), Array(key.utf8),
                                            SharedAccessToken.token("ya29.old", keptUntil: now - 1).encoded]))
        let endpoint = Endpoint()
        #expect(try obtainAtOnce([instance], endpoint) == [endpoint.answer])
        #expect(endpoint.requests.withLock { $0 } == 1)
        #expect(instance.warnings.messages.isEmpty)
    }

    @Test("a hostile value is replaced by a fetched token, with one warning that quotes nothing of it",
          arguments: ["1700000000 ya29.x\r\nX: 1", "99999999999 ya29.far-ahead", "garbage", "renewing \u{1}"])
    func hostileValueReplaced(value: String) throws {
        let server = try RedisServer()
        let instance = try Instance(server, name: "relay-0")
        defer { instance.link.close() }
        _ = instance.link.run("SET", key, value)
        let endpoint = Endpoint()
        #expect(try obtainAtOnce([instance], endpoint) == [endpoint.answer])
        #expect(endpoint.requests.withLock { $0 } == 1)
        #expect(instance.warnings.messages.count == 1)
        #expect(instance.warnings.messages.allSatisfy { !$0.contains("ya29") && $0.contains(key) })
        guard case .token("ya29.fleet", _)? = stored(instance.link) else {
            Issue.record("the fetched token is not in Redis")
            return
        }
    }

    @Test("a fetch without a token frees the key: the next instance fetches at once, not after the lease")
    func failedFetchFreesKey() throws {
        let server = try RedisServer()
        let instances = try (0..<2).map { try Instance(server, name: "relay-\($0)") }
        defer { instances.forEach { $0.link.close() } }
        let refused = Endpoint(answer: .answered(status: 400, body: Array(#"{"error":"invalid_grant"}"#.utf8),
                                                 retryAfterSeconds: nil))
        #expect(try obtainAtOnce([instances[0]], refused) == [refused.answer])
        guard case .success(.null)? = instances[0].link.run("GET", key) else {
            Issue.record("the renewal mark stayed")
            return
        }
        let endpoint = Endpoint()
        #expect(try obtainAtOnce([instances[1]], endpoint) == [endpoint.answer])
    }

    @Test("with Redis down each instance fetches its own, without waiting for the command timeout")
    func redisDownFetchesOwn() throws {
        let server = try RedisServer()
        let instance = try Instance(server, name: "relay-0", commandTimeout: .seconds(1))
        defer { instance.link.close() }
        server.kill()
        let endpoint = Endpoint()
        #expect(try obtainAtOnce([instance], endpoint) == [endpoint.answer])
        #expect(endpoint.requests.withLock { $0 } == 1)
    }
}
