import Testing
@testable import HTTP2

/// Records only what the core session reports, to test it beneath the client and server.
private final class EventLog: NGHTTP2EventHandler {
    var frames: [String] = []
    func beginHeaders(streamID: Int32, opensStream: Bool) { frames.append("begin \(streamID) \(opensStream)") }
    func header(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        frames.append("\(String(decoding: name, as: UTF8.self))=\(String(decoding: value, as: UTF8.self))")
    }
    func dataChunk(streamID: Int32, bytes: UnsafeRawBufferPointer) { frames.append("data \(bytes.count)") }
    func frameReceived(_ frame: ReceivedFrame) {
        switch frame {
        case .headers(let id, let end): frames.append("headers \(id) \(end)")
        case .data(let id, let end): frames.append("dataframe \(id) \(end)")
        case .settings: frames.append("settings")
        case .windowUpdate(let id): frames.append("window \(id)")
        case .pingAck(let payload): frames.append("ping \(payload)")
        case .goAway(let last, let code, let debug): frames.append("goaway \(last) \(code) \(debug)")
        case .rstStream(let id): frames.append("rst \(id)")
        }
    }
    func streamClosed(streamID: Int32, errorCode: HTTP2ErrorCode) { frames.append("closed \(streamID) \(errorCode)") }
}

@Suite("NGHTTP2Session")
struct NGHTTP2SessionTests {
    @Test("a client session starts with the connection preface and a SETTINGS frame")
    func clientPreface() throws {
        let session = try NGHTTP2Session(role: .client, settings: [(.enablePush, 0)])
        #expect(session.hasPendingOutput)
        var output: [UInt8] = []
        session.takeOutput(into: &output)
        let magic = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        #expect(Array(output.prefix(magic.count)) == magic)
        let settings = Array(output.dropFirst(magic.count))
        #expect(Array(settings.prefix(9)) == [0, 0, 6, 0x4, 0, 0, 0, 0, 0])  // one setting, type SETTINGS
        #expect(Array(settings[9..<15]) == [0, 2, 0, 0, 0, 0])  // ENABLE_PUSH = 0
        #expect(!session.hasPendingOutput)
        session.takeOutput(into: &output)
        #expect(output.count == magic.count + 15)
    }

    @Test("two core sessions exchange a request, and every stream close is reported")
    func coreRoundTrip() throws {
        let (client, clientLog, server, serverLog) = try loggedPair()
        let block = try requestBlock(method: "POST", path: "/p")
        let streamID = try client.submitRequest(block, body: [1, 2, 3])
        try exchange(client, server)
        #expect(serverLog.frames.contains("begin \(streamID) true"))
        #expect(serverLog.frames.contains(":path=/p"))
        #expect(serverLog.frames.contains("data 3"))
        #expect(serverLog.frames.contains("dataframe \(streamID) true"))
        var response = HeaderBlock()
        try response.appendPseudo(":status", "204")
        try server.submitResponse(streamID: streamID, headers: response, body: [])
        var bytes: [UInt8] = []
        server.takeOutput(into: &bytes)
        try client.receive(bytes)
        #expect(clientLog.frames.contains(":status=204"))
        #expect(clientLog.frames.filter { $0 == "closed \(streamID) NO_ERROR" }.count == 1)
        #expect(serverLog.frames.filter { $0 == "closed \(streamID) NO_ERROR" }.count == 1)
    }

    @Test("nghttp2 itself closes opened streams above a GOAWAY's last-stream-id with REFUSED_STREAM")
    func nghttp2RefusesAboveLastStreamID() throws {
        let (client, clientLog, server, serverLog) = try loggedPair()
        let block = try requestBlock(method: "GET", path: "/")
        let ids = try (0..<3).map { _ in try client.submitRequest(block, body: []) }
        #expect(ids == [1, 3, 5])
        try exchange(client, server)
        try server.submitGoAway(lastStreamID: 1, errorCode: .noError, debugData: "")
        try exchange(client, server)
        #expect(clientLog.frames.contains("goaway 1 NO_ERROR "))
        #expect(clientLog.frames.contains("closed 3 REFUSED_STREAM"))
        #expect(clientLog.frames.contains("closed 5 REFUSED_STREAM"))
        #expect(!clientLog.frames.contains { $0.hasPrefix("closed 1") })
        #expect(serverLog.frames.contains("closed 3 REFUSED_STREAM"))
        #expect(serverLog.frames.contains("closed 5 REFUSED_STREAM"))
        #expect(throws: HTTP2Error.newStreamsNotAllowed) { try client.submitRequest(block, body: []) }
    }

    @Test("an empty input is a no-op")
    func emptyInput() throws {
        let session = try NGHTTP2Session(role: .server, settings: [])
        try session.receive(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(session.failure == nil)
    }
}

/// A client and a server session, each reporting to a log of its own.
private func loggedPair() throws -> (client: NGHTTP2Session, clientLog: EventLog,
                                     server: NGHTTP2Session, serverLog: EventLog) {
    let client = try NGHTTP2Session(role: .client, settings: [])
    let server = try NGHTTP2Session(role: .server, settings: [])
    let clientLog = EventLog(), serverLog = EventLog()
    client.handler = clientLog
    server.handler = serverLog
    return (client, clientLog, server, serverLog)
}

/// A request's pseudo-header fields, authority "a" over https.
private func requestBlock(method: String, path: String) throws -> HeaderBlock {
    var block = HeaderBlock()
    for (name, value) in [(":method", method), (":scheme", "https"), (":authority", "a"), (":path", path)] {
        try block.appendPseudo(name, value)
    }
    return block
}

/// Ten rounds of client → server → client bytes: enough for every exchange
/// these tests start (a request, its answer, GOAWAY and the closes after it).
private func exchange(_ client: NGHTTP2Session, _ server: NGHTTP2Session) throws {
    for _ in 0..<10 {
        var bytes: [UInt8] = []
        client.takeOutput(into: &bytes)
        try server.receive(bytes)
        bytes.removeAll()
        server.takeOutput(into: &bytes)
        try client.receive(bytes)
    }
}
