@testable import EventLoop
import Glibc
import Testing

@Suite("Acceptor")
struct AcceptorTests {
    @Test("out of descriptors: the acceptor stops watching, backs off, then accepts the waiting connection")
    func backsOffOnResourceExhaustion() async throws {
        let outcome = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<(attempts: Int, errors: [SocketError], pausedInterest: IOEvents?, accepted: Int)>) in
                let listener = try Socket.listen(host: "127.0.0.1", port: 0)
                let address = try #require(SocketAddress(ip: "127.0.0.1", port: listener.localPort))
                let state = Recorder<Int>()
                state.items = [0, 0]  // accept attempts, accepted
                let errors = Recorder<SocketError>()
                let held = Recorder<Socket>()
                let pausedInterest = Recorder<IOEvents?>()
                // Counted, not timed: the first three attempts find no free
                // descriptor, so the test holds on a slow machine (sanitizers).
                let finish = {
                    promise.succeed((state.items[0], errors.items, pausedInterest.items.first ?? nil, state.items[1]))
                }
                let acceptor = try Acceptor(listener: listener, on: loop, backoff: .milliseconds(20), onAccept: { socket in
                    state.items[1] += 1
                    held.items.append(socket)
                    // Let a wrongly level-triggered acceptor show more attempts first.
                    loop.schedule(after: .milliseconds(50)) { finish() }
                }, onError: { errors.items.append($0) })
                acceptor.acceptConnection = { socket throws(SocketError) in
                    state.items[0] += 1
                    if state.items[0] == 1 {
                        // Runs after the acceptor has handled this failure.
                        loop.schedule(after: .zero) {
                            pausedInterest.items.append(loop.interest(of: listener.fileDescriptor))
                        }
                    }
                    if state.items[0] <= 3 { throw SocketError(.accept, errno: EMFILE) }
                    return try socket.accept()
                }
                let (client, _) = try Socket.connect(to: address)
                held.items.append(client)
                loop.schedule(after: .seconds(10)) {
                    finish()
                    acceptor.close()
                }
            }
        }
        // Level-triggered without back-off this would be thousands of attempts.
        #expect(outcome.attempts >= 2)
        #expect(outcome.attempts <= 10)
        #expect(outcome.errors.allSatisfy { $0.isResourceExhaustion })
        #expect(outcome.pausedInterest == [])
        #expect(outcome.accepted == 1)
    }

    @Test("pause stops accepting and resume picks the queued connections up")
    func pauseAndResume() async throws {
        let accepted = try await withLoopThread { loop in
            try await onLoop(loop) { (promise: Promise<(whilePaused: Int, afterResume: Int)>) in
                let listener = try Socket.listen(host: "127.0.0.1", port: 0)
                let address = try #require(SocketAddress(ip: "127.0.0.1", port: listener.localPort))
                let held = Recorder<Socket>()
                let count = Recorder<Int>()
                count.items = [0]
                let acceptor = try Acceptor(listener: listener, on: loop, maxPerWakeup: 2, onAccept: { socket in
                    count.items[0] += 1
                    held.items.append(socket)
                })
                acceptor.pause()
                #expect(!acceptor.isAccepting)
                for _ in 0..<5 { held.items.append(try Socket.connect(to: address).socket) }
                loop.schedule(after: .milliseconds(30)) {
                    let whilePaused = count.items[0]
                    acceptor.resume()
                    loop.schedule(after: .milliseconds(30)) {
                        promise.succeed((whilePaused, count.items[0]))
                        acceptor.close()
                        acceptor.close()
                    }
                }
            }
        }
        #expect(accepted.whilePaused == 0)
        #expect(accepted.afterResume == 5)
    }
}
