import EventLoop
import RelayCore
import Testing
@testable import APNs

@Suite("Connection lifecycle")
struct ConnectionLifecycleTests {
    let first = SocketAddress(ip: "127.0.0.1", port: 443)!
    let second = SocketAddress(ip: "::1", port: 443)!

    func readyLifecycle() -> ConnectionLifecycle {
        var lifecycle = ConnectionLifecycle()
        _ = lifecycle.start()
        _ = lifecycle.resolved([first])
        _ = lifecycle.connected()
        _ = lifecycle.handshakeCompleted(alpn: "h2")
        _ = lifecycle.settingsReceived()
        return lifecycle
    }

    @Test("the happy path: idle → resolving → connecting → handshaking → ready → draining → closed")
    func happyPath() {
        var lifecycle = ConnectionLifecycle()
        #expect(lifecycle.state == .idle)
        #expect(lifecycle.start() == [.armConnectTimeout, .resolve])
        #expect(lifecycle.state == .resolving)
        #expect(lifecycle.resolved([first, second]) == [.connect(first)])
        #expect(lifecycle.state == .connecting)
        #expect(lifecycle.connected() == [.startTLSHandshake])
        #expect(lifecycle.state == .handshaking)
        #expect(lifecycle.handshakeCompleted(alpn: "h2") == [.startHTTP2Session])
        #expect(lifecycle.state == .handshaking)
        #expect(!lifecycle.wasReady)
        #expect(lifecycle.settingsReceived() == [.cancelConnectTimeout, .becameReady])
        #expect(lifecycle.state == .ready)
        #expect(lifecycle.wasReady)
        // Later SETTINGS change limits only.
        #expect(lifecycle.settingsReceived() == [])
        #expect(lifecycle.drain() == [.sendGoAway])
        #expect(lifecycle.state == .draining)
        #expect(lifecycle.drained() == [.close(nil)])
        #expect(lifecycle.state == .closed)
        #expect(lifecycle.start() == [])
    }

    @Test("each address is tried in turn; the last error is the failure")
    func addressFallback() {
        var lifecycle = ConnectionLifecycle()
        _ = lifecycle.start()
        _ = lifecycle.resolved([first, second])
        #expect(lifecycle.connectFailed("refused") == [.connect(second)])
        #expect(lifecycle.connectFailed("unreachable") == [.close(.connect("unreachable"))])
    }

    @Test("failures are classed by the phase they happen in")
    func failureClasses() {
        var resolving = ConnectionLifecycle()
        _ = resolving.start()
        #expect(resolving.resolveFailed("NXDOMAIN") == [.close(.connect("cannot resolve host: NXDOMAIN"))])

        var empty = ConnectionLifecycle()
        _ = empty.start()
        #expect(empty.resolved([]) == [.close(.connect("host resolved to no address"))])

        var handshaking = ConnectionLifecycle()
        _ = handshaking.start()
        _ = handshaking.resolved([first])
        _ = handshaking.connected()
        #expect(handshaking.failed("certificate verify failed") == [.close(.tls("certificate verify failed"))])

        var ready = readyLifecycle()
        #expect(ready.failed("EOF") == [.close(.lost("EOF"))])
        #expect(ready.failed("again") == [])
    }

    @Test("ALPN other than h2 fails the TLS phase", arguments: [nil, "http/1.1"] as [String?])
    func alpnRequired(alpn: String?) {
        var lifecycle = ConnectionLifecycle()
        _ = lifecycle.start()
        _ = lifecycle.resolved([first])
        _ = lifecycle.connected()
        let actions = lifecycle.handshakeCompleted(alpn: alpn)
        guard case .close(.tls(let detail))? = actions.first else {
            Issue.record("got \(actions)")
            return
        }
        #expect(detail.contains("h2"))
        #expect(lifecycle.state == .closed)
    }

    @Test("the connect timeout is a connect failure before TLS, a TLS failure during it, nothing once ready")
    func connectTimeout() {
        var connecting = ConnectionLifecycle()
        _ = connecting.start()
        _ = connecting.resolved([first])
        _ = connecting.connectFailed("refused")
        var connecting2 = ConnectionLifecycle()
        _ = connecting2.start()
        _ = connecting2.resolved([first, second])
        _ = connecting2.connectFailed("refused")
        #expect(connecting2.connectTimedOut(after: "5 seconds") == [.close(.connect("connect timed out after 5 seconds (refused)"))])

        var handshaking = ConnectionLifecycle()
        _ = handshaking.start()
        _ = handshaking.resolved([first])
        _ = handshaking.connected()
        #expect(handshaking.connectTimedOut(after: "5 seconds") == [.close(.tls("TLS/HTTP/2 handshake timed out after 5 seconds"))])

        var ready = readyLifecycle()
        #expect(ready.connectTimedOut(after: "5 seconds") == [])
    }

    @Test("GOAWAY drains a ready connection, and fails one not yet ready")
    func goAway() {
        var ready = readyLifecycle()
        #expect(ready.goAwayReceived() == [])
        #expect(ready.state == .draining)
        #expect(ready.drain() == [])
        #expect(ready.goAwayReceived() == [])

        var handshaking = ConnectionLifecycle()
        _ = handshaking.start()
        _ = handshaking.resolved([first])
        _ = handshaking.connected()
        #expect(handshaking.goAwayReceived() == [.close(.tls("server sent GOAWAY before the connection was ready"))])
    }

    @Test("draining before ready closes at once")
    func drainEarly() {
        var lifecycle = ConnectionLifecycle()
        _ = lifecycle.start()
        #expect(lifecycle.drain() == [.close(nil)])
        #expect(lifecycle.drained() == [])
    }

    @Test("states are ordered along the lifecycle")
    func ordering() {
        #expect(APNsConnectionState.allCases.sorted() == APNsConnectionState.allCases)
        #expect(APNsConnectionState.handshaking < .ready && .ready < .draining)
    }

    @Test("failure classes map to the outcomes of requests that were waiting")
    func outcomes() {
        #expect(ConnectionFailure.connect("x").outcomeForWaitingRequest == .connectFailed("x"))
        #expect(ConnectionFailure.tls("y").outcomeForWaitingRequest == .tlsFailed("y"))
        #expect(ConnectionFailure.lost("z").outcomeForWaitingRequest == .streamFailed("z"))
    }
}
