import HTTP2
import Testing
import TestSupport
@testable import APNsEmulator

@Suite("Emulator connections: SETTINGS, GOAWAY, drops", .timeLimit(.minutes(1)))
struct EmulatorConnectionTests {
    @Test("SETTINGS_MAX_CONCURRENT_STREAMS is announced and enforced")
    func announcesMaxStreams() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(100),
                                                                           maxConcurrentStreams: 3))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        #expect(client.run { !client.announcedMaxStreams.isEmpty })
        #expect(client.announcedMaxStreams == [3])
        let streams = try (0..<6).map { try client.submit(token: Fixture.token($0)) }
        #expect(client.runUntilClosed(streams))
        #expect(streams.allSatisfy { client.responses[$0]?.status == 200 })
        #expect(emulator.acceptedCount == 6)
    }

    @Test("a small initial limit is raised once the first request arrives, as APNs does")
    func raisesLimitAfterFirstRequest() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(maxConcurrentStreams: 50,
                                                                           initialMaxConcurrentStreams: 1))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        #expect(client.run { !client.announcedMaxStreams.isEmpty })
        #expect(client.announcedMaxStreams == [1])
        let first = try client.submit()
        #expect(client.runUntilClosed([first]))
        #expect(client.run { client.announcedMaxStreams.count == 2 })
        #expect(client.announcedMaxStreams == [1, 50])
    }

    @Test("changing maxConcurrentStreams at run time sends SETTINGS on live connections")
    func runtimeSettings() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        #expect(client.run { !client.announcedMaxStreams.isEmpty })
        emulator.update { $0.maxConcurrentStreams = 17 }
        #expect(client.run { client.announcedMaxStreams.last == 17 })
        #expect(client.announcedMaxStreams == [1000, 17])
    }

    @Test("goAwayAfterStreams: GOAWAY names the N-th stream, later streams are refused, the connection closes")
    func goAwayAfterN() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(goAwayAfterStreams: 3))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let streams = try (0..<5).map { try client.submit(token: Fixture.token($0)) }
        #expect(client.runUntilClosed(streams))
        #expect(client.goAwayLastStreamID == streams[2])
        #expect(streams[0...2].allSatisfy { client.responses[$0]?.status == 200 })
        #expect(streams[3...].allSatisfy { client.closedStreams[$0] == .refusedStream && client.responses[$0] == nil })
        #expect(client.run { client.connectionClosed })
        #expect(emulator.acceptedCount == 3)
        #expect(eventually { emulator.statistics.openConnections == 0 })
        // A new connection gets its own count.
        let next = try TestClient(port: emulator.port)
        let again = try next.submit()
        #expect(next.runUntilClosed([again]))
        #expect(next.responses[again]?.status == 200)
    }

    @Test("goAwayAfterStreams with pending delayed answers: they are still delivered before the close")
    func goAwayDrainsDelayedAnswers() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(50),
                                                                           goAwayAfterStreams: 2))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let streams = try (0..<4).map { try client.submit(token: Fixture.token($0)) }
        #expect(client.runUntilClosed(streams))
        #expect(client.goAwayLastStreamID == streams[1])
        #expect(client.responses[streams[0]]?.status == 200)
        #expect(client.responses[streams[1]]?.status == 200)
        #expect(client.closedStreams[streams[3]] == .refusedStream)
        #expect(client.run { client.connectionClosed })
    }

    @Test("dropAfterStreams: the N-th request closes the TCP connection unanswered")
    func dropAfterN() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(dropAfterStreams: 3))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        var answered: [Int32] = []
        for index in 0..<2 {
            let stream = try client.submit(token: Fixture.token(index))
            #expect(client.runUntilClosed([stream]))
            answered.append(stream)
        }
        let third = try client.submit(token: Fixture.token(2))
        #expect(client.run { client.connectionClosed })
        #expect(answered.allSatisfy { client.responses[$0]?.status == 200 })
        #expect(client.responses[third] == nil)
        #expect(client.goAwayLastStreamID == nil)
        #expect(emulator.acceptedCount == 2)
        #expect(emulator.statistics.droppedConnections == 1)
        #expect(eventually { emulator.statistics.openConnections == 0 })
    }

    @Test("stop() closes live connections and the port stops accepting")
    func stopClosesEverything() throws {
        let emulator = try Fixture.emulator()
        let port = emulator.port
        let client = try TestClient(port: port)
        #expect(client.run { !client.announcedMaxStreams.isEmpty })
        emulator.stop()
        #expect(client.run { client.connectionClosed })
        #expect(throws: (any Error).self) { try TestClient(port: port, timeout: .seconds(2)) }
        emulator.stop()
    }

    /// The byte pump both ends share, seen from the test client: its write
    /// accounting is what the relay's resend decision (RFC 9113 §6.8) rests on.
    @Test("the byte pump reports each batch of frames where it begins, in order, and OpenSSL takes every byte taken")
    func pumpWriteAccounting() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let answered = try (0..<3).map { index in client.runUntilClosed([try client.submit(token: Fixture.token(index))]) }
        #expect(answered == [true, true, true])
        let offsets = client.serializedOffsets
        // Each request is submitted after the previous one closed: at least
        // one batch each, the first (with the preface) at offset 0.
        #expect(offsets.first == 0)
        #expect(offsets.count >= 3)
        #expect(zip(offsets, offsets.dropFirst()).allSatisfy { $0 < $1 })
        #expect(client.pump.pendingBytes == 0)
        #expect(client.pump.writtenTotal == client.pump.serializedTotal)
        #expect(offsets.last.map { $0 < client.pump.serializedTotal } == true)
    }
}
