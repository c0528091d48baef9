import HTTP2Transport
import Testing
@testable import APNsEmulator

/// The byte pump both ends share, seen from the test client: its write
/// accounting is what the relay's resend decision (RFC 9113 §6.8) rests on.
@Suite("HTTP/2 over TLS byte pump", .timeLimit(.minutes(1)))
struct HTTP2TLSPumpTests {
    @Test("each batch of frames is reported where it begins, in order, and OpenSSL takes every byte taken")
    func writeAccounting() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        #expect(client.run { !client.announcedMaxStreams.isEmpty })
        for index in 0..<3 {
            let stream = try client.submit(token: Fixture.token(index))
            #expect(client.runUntilClosed([stream]))
        }
        let offsets = client.serializedOffsets
        // The preface and SETTINGS first, then at least one batch per request.
        #expect(offsets.first == 0)
        #expect(offsets.count >= 4)
        #expect(zip(offsets, offsets.dropFirst()).allSatisfy { $0 < $1 })
        #expect(client.pump.pendingBytes == 0)
        #expect(client.pump.writtenTotal == client.pump.serializedTotal)
        #expect(offsets.last.map { $0 < client.pump.serializedTotal } == true)
    }
}
