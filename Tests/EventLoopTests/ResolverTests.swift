import EventLoop
import Glibc
import Testing

@Suite("Resolver")
struct ResolverTests {
    private func resolve(_ host: String, port: UInt16) async throws -> Result<[SocketAddress], SocketError> {
        try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<Result<[SocketAddress], SocketError>>) in
                var completedInline = true
                Resolver.resolve(host: host, port: port, on: loop) { result in
                    #expect(loop.isOnLoopThread)
                    #expect(!completedInline)
                    promise.succeed(result)
                }
                completedInline = false
            }
        }
    }

    @Test("localhost resolves to the loopback address")
    func localhost() async throws {
        let addresses = try await resolve("localhost", port: 4242).get()
        #expect(addresses.contains(SocketAddress(ip: "127.0.0.1", port: 4242)!) || addresses.contains(SocketAddress(ip: "::1", port: 4242)!))
        #expect(addresses.allSatisfy { $0.port == 4242 })
    }

    @Test("numeric literals resolve to themselves", arguments: ["127.0.0.1", "::1", "[::1]", "10.1.2.3"])
    func numeric(host: String) async throws {
        let addresses = try await resolve(host, port: 443).get()
        #expect(addresses == [SocketAddress(ip: host, port: 443)!])
    }

    @Test("malformed names fail with EINVAL before any lookup", arguments: [
        "", "bad host", "a..b", "-a.example", "a-.example", "exa_mple.com", "ho\u{0}st", "é.example",
        String(repeating: "a", count: 64) + ".example", String(repeating: "a.", count: 127) + "ab",
    ])
    func malformed(host: String) async throws {
        let result = try await resolve(host, port: 1)
        #expect(throws: SocketError(.resolve, errno: EINVAL)) { try result.get() }
    }

    @Test("well-formed names are accepted by the syntax check", arguments: [
        "localhost", "api.push.apple.com", "api.sandbox.push.apple.com.", "a", "x-1.example", "1host",
    ])
    func wellFormed(host: String) {
        #expect(Resolver.isValidHostName(host))
    }

    @Test("a resolver error describes itself with the getaddrinfo text")
    func errorDescription() {
        let error = SocketError(.resolve, errno: EAI_NONAME)
        #expect(error.description.hasPrefix("resolve failed: "))
        #expect(!error.description.contains("Unknown error"))
    }
}
