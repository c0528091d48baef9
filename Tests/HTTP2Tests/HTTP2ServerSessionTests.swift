import Testing
@testable import HTTP2

@Suite("HTTP2ServerSession")
struct HTTP2ServerSessionTests {
    let clientEvents = ClientRecorder()
    let serverEvents = ServerRecorder()

    private func makePair(maxConcurrentStreams: UInt32? = nil, maxHeaderListSize: Int = 16_384)
        throws -> (HTTP2ClientSession, HTTP2ServerSession) {
        (try HTTP2ClientSession(delegate: clientEvents),
         try HTTP2ServerSession(delegate: serverEvents, maxConcurrentStreams: maxConcurrentStreams,
                                maxHeaderListSize: maxHeaderListSize))
    }

    @Test("a connection window outside 1...2^31-1 is refused (RFC 9113 §6.9.1)",
          arguments: [0, -1, Int(Int32.max) + 1])
    func connectionWindowLimits(size: Int) {
        #expect(throws: HTTP2Error.self) {
            _ = try HTTP2ServerSession(delegate: serverEvents, connectionWindowSize: size)
        }
    }

    @Test("a request without a body is delivered when its HEADERS end the stream")
    func headersOnlyRequest() throws {
        let (client, server) = try makePair()
        let streamID = try client.submitRequest(method: "GET", path: "/health", authority: "relay", headers: [], body: [])
        try pump(client, server)
        let request = try #require(serverEvents.requests.first)
        #expect(request.streamID == streamID && request.method == "GET" && request.path == "/health")
        #expect(request.body.isEmpty)
        #expect(server.activeStreamCount == 1)
    }

    @Test("a response can be sent later, with headers and body, and then the stream closes")
    func deferredResponse() throws {
        let (client, server) = try makePair()
        let streamID = try client.submitRequest(path: "/3/device/x", authority: "a", headers: [], body: [1])
        try pump(client, server)
        #expect(clientEvents.responses.isEmpty)
        try server.submitResponse(streamID: streamID, status: 410,
                                  headers: [("apns-id", "abc"), ("content-type", "application/json")],
                                  body: Array(#"{"reason":"Unregistered"}"#.utf8))
        try pump(client, server)
        let response = try #require(clientEvents.responses[streamID])
        #expect(response.status == 410)
        #expect(response.headers.map(\.name) == ["apns-id", "content-type"])
        #expect(clientEvents.bodies[streamID] == Array(#"{"reason":"Unregistered"}"#.utf8))
        #expect(serverEvents.closes.count == 1 && serverEvents.closeCode(streamID) == .noError)
        #expect(server.activeStreamCount == 0)
    }

    @Test("responding with a non-final status or to a stream that is not open is refused",
          arguments: [(99, Int32(1)), (100, 1), (600, 1), (200, 3), (200, 2)])
    func refusesBadResponses(status: Int, streamID: Int32) throws {
        let (client, server) = try makePair()
        _ = try client.submitRequest(path: "/", authority: "a", headers: [], body: [])
        try pump(client, server)
        #expect(throws: HTTP2Error.self) {
            try server.submitResponse(streamID: streamID, status: status, headers: [], body: [])
        }
    }

    @Test("a header list over the cap resets the stream with CANCEL and nothing is delivered")
    func headerListCap() throws {
        let (client, server) = try makePair(maxHeaderListSize: 1_024)
        let big = String(repeating: "v", count: 2_000)
        let streamID = try client.submitRequest(path: "/", authority: "a", headers: [("x-big", big)], body: [1])
        try pump(client, server)
        #expect(serverEvents.requests.isEmpty)
        #expect(clientEvents.closeCode(streamID) == .cancel)
        #expect(serverEvents.closeCode(streamID) == .cancel)
    }

    @Test("GOAWAY needs a client stream id (odd) or 0", arguments: [Int32(2), -1])
    func goAwayValidatesLastStreamID(lastStreamID: Int32) throws {
        let (_, server) = try makePair()
        #expect(throws: HTTP2Error.self) { try server.submitGoAway(lastStreamID: lastStreamID) }
    }

    @Test("GOAWAY after N streams: the client resends the refused ones on a new connection, none lost or doubled")
    func goAwayAfterNStreamsThenResend() throws {
        let (client, server) = try makePair()
        serverEvents.onRequest = { session, request in
            // Answer the first two requests, then announce that nothing after them was processed.
            if request.streamID <= 3 {
                try? session.submitResponse(streamID: request.streamID, status: 200, headers: [], body: [])
            }
            if request.streamID == 3 { try? session.submitGoAway(lastStreamID: 3) }
        }
        var payloadByStream: [Int32: String] = [:]
        for index in 0..<6 {
            payloadByStream[try client.submitRequest(path: "/p", authority: "a", headers: [],
                                                     body: Array("msg\(index)".utf8))] = "msg\(index)"
        }
        try pump(client, server)
        let refused = clientEvents.closes.filter { $0.errorCode == .refusedStream }.map(\.streamID)
        let done = clientEvents.closes.filter { $0.errorCode == .noError }.map(\.streamID)
        #expect(done.sorted() == [1, 3])
        #expect(refused.sorted() == [5, 7, 9, 11])

        let secondClientEvents = ClientRecorder()
        let secondServerEvents = ServerRecorder()
        secondServerEvents.answer = { _ in .init() }
        let client2 = try HTTP2ClientSession(delegate: secondClientEvents)
        let server2 = try HTTP2ServerSession(delegate: secondServerEvents)
        for streamID in refused.sorted() {
            _ = try client2.submitRequest(path: "/p", authority: "a", headers: [],
                                          body: Array((payloadByStream[streamID] ?? "").utf8))
        }
        try pump(client2, server2)
        let delivered = (serverEvents.requests.filter { $0.streamID <= 3 } + secondServerEvents.requests)
            .map { String(decoding: $0.body, as: UTF8.self) }
        #expect(delivered.sorted() == (0..<6).map { "msg\($0)" })
    }

    @Test("a shutdown notice keeps streams going; the final GOAWAY then ends the session")
    func gracefulShutdown() throws {
        let (client, server) = try makePair()
        let first = try client.submitRequest(path: "/", authority: "a", headers: [], body: [1])
        try pump(client, server)
        try server.submitShutdownNotice()
        try pump(client, server)
        #expect(clientEvents.goAways.map(\.lastStreamID) == [Int32.max])
        #expect(clientEvents.closes.isEmpty)
        try server.submitGoAway()
        try serverEvents.answerPending(server)
        try pump(client, server)
        #expect(clientEvents.goAways.map(\.lastStreamID) == [Int32.max, first])
        #expect(clientEvents.closeCode(first) == .noError)
        #expect(!server.wantsRead && !server.wantsWrite)
    }

    @Test("garbage instead of the client preface is a library error, no crash")
    func badClientMagic() throws {
        let server = try HTTP2ServerSession(delegate: serverEvents)
        let garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let error = #expect(throws: HTTP2Error.self) {
            try server.receive(garbage)
        }
        guard case .library(let code, let message) = error else {
            Issue.record("expected a library error, got \(String(describing: error))")
            return
        }
        #expect(code == -903)  // NGHTTP2_ERR_BAD_CLIENT_MAGIC
        #expect(!message.isEmpty)
        #expect(!server.wantsRead)
    }

    @Test("random bytes after the preface never crash either session", arguments: 0..<40)
    func randomInput(seed: Int) throws {
        let (client, server) = try makePair()
        try pump(client, server)
        let noise = pseudoRandomBytes(count: 16 + seed * 37, seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15)
        for session in [0, 1] {
            do {
                if session == 0 { try client.receive(noise) } else { try server.receive(noise) }
            } catch {
                #expect(error != .sessionClosed)
            }
        }
        _ = client.takeOutput()
        _ = server.takeOutput()
    }
}
