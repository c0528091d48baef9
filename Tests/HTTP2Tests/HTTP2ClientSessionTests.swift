import HTTPCore
import Testing
@testable import HTTP2

@Suite("HTTP2ClientSession")
struct HTTP2ClientSessionTests {
    let clientEvents = ClientRecorder()
    let serverEvents = ServerRecorder()

    private func makePair(maxConcurrentStreams: UInt32? = nil, maxRequestBodySize: Int = 65_536,
                          initialWindowSize: UInt32? = nil) throws -> (HTTP2ClientSession, HTTP2ServerSession) {
        let client = try HTTP2ClientSession(delegate: clientEvents, initialWindowSize: initialWindowSize)
        let server = try HTTP2ServerSession(delegate: serverEvents, maxConcurrentStreams: maxConcurrentStreams,
                                            maxRequestBodySize: maxRequestBodySize)
        return (client, server)
    }

    @Test("a request with headers and body reaches the server intact and its response comes back")
    func requestAndResponseRoundTrip() throws {
        let (client, server) = try makePair()
        serverEvents.answer = { request in
            .init(status: 200, headers: [("apns-id", "7A0C2B1E-0000-4000-8000-000000000001")],
                  body: Array("ok:\(request.body.count)".utf8))
        }
        let body = Array(#"{"aps":{"alert":"🎺"}}"#.utf8)
        let streamID = try client.submitRequest(
            path: "/3/device/abcdef", authority: "api.push.apple.com",
            headers: [("apns-topic", "cx.c3.toot"), ("apns-priority", "10"), ("apns-push-type", "alert")],
            body: body)
        #expect(streamID == 1)
        #expect(client.activeStreamCount == 1)
        try pump(client, server)

        let request = try #require(serverEvents.requests.first)
        #expect(serverEvents.requests.count == 1)
        #expect(request.streamID == streamID)
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/abcdef")
        #expect(request.authority == "api.push.apple.com")
        #expect(request.scheme == "https")
        #expect(request.header("apns-topic") == "cx.c3.toot")
        #expect(request.headers.map(\.name) == ["apns-topic", "apns-priority", "apns-push-type"])
        #expect(request.body == body)

        let response = try #require(clientEvents.responses[streamID])
        #expect(response.status == 200)
        #expect(response.header("apns-id") == "7A0C2B1E-0000-4000-8000-000000000001")
        #expect(!response.headers.contains { $0.name.hasPrefix(":") })
        #expect(clientEvents.bodies[streamID] == Array("ok:\(body.count)".utf8))
        #expect(clientEvents.closes.count == 1)
        #expect(clientEvents.closeCode(streamID) == .noError)
        #expect(client.activeStreamCount == 0)
        #expect(serverEvents.closeCode(streamID) == .noError)
    }

    @Test("1,000 requests against a limit of 100 all complete once and never exceed 100 open")
    func respectsMaxConcurrentStreams() throws {
        let (client, server) = try makePair(maxConcurrentStreams: 100)
        var submitted: [Int32] = []
        for index in 0..<1_000 {
            submitted.append(try client.submitRequest(path: "/3/device/\(index)", authority: "localhost",
                                                      headers: [], body: Array("n\(index)".utf8)))
        }
        #expect(client.activeStreamCount == 1_000)
        var maxOpenAtServer = 0
        for _ in 0..<100 where clientEvents.closes.count < 1_000 {
            try pump(client, server) { maxOpenAtServer = max(maxOpenAtServer, server.activeStreamCount) }
            try serverEvents.answerPending(server)
        }
        #expect(maxOpenAtServer == 100)
        #expect(serverEvents.requests.count == 1_000)
        #expect(clientEvents.closes.count == 1_000)
        #expect(clientEvents.closeCounts.values.allSatisfy { $0 == 1 })
        #expect(Set(clientEvents.closes.map(\.streamID)) == Set(submitted))
        #expect(clientEvents.closes.allSatisfy { $0.errorCode == .noError })
        #expect(clientEvents.responses.count == 1_000)
        #expect(clientEvents.responses.values.allSatisfy { $0.status == 200 })
        #expect(client.activeStreamCount == 0)
    }

    @Test("the server's SETTINGS and a later change of max concurrent streams reach the delegate")
    func seesMaxConcurrentStreamsChange() throws {
        let (client, server) = try makePair(maxConcurrentStreams: 100)
        // nghttp2 assumes 100 until the server's SETTINGS arrive.
        #expect(client.remoteMaxConcurrentStreams == 100)
        try pump(client, server)
        #expect(clientEvents.settings == [100])
        try server.submitSettings(maxConcurrentStreams: 7)
        try pump(client, server)
        #expect(clientEvents.settings == [100, 7])
        #expect(client.remoteMaxConcurrentStreams == 7)
        try server.submitSettings(maxConcurrentStreams: 1_000)
        try pump(client, server)
        #expect(clientEvents.settings.last == 1_000)
        #expect(client.remoteMaxConcurrentStreams == 1_000)
    }

    @Test("bodies count against the server's connection window from submission until they are sent")
    func connectionWindowAccounting() throws {
        let (client, server) = try makePair()
        // RFC 9113 §6.9.2: every connection starts with a 65,535-byte window.
        #expect(client.sendableBodyBytes == 65_535)
        let bodies = (0..<30).map { pseudoRandomBytes(count: 3000, seed: UInt64($0) + 1) }
        for body in bodies {
            _ = try client.submitRequest(path: "/3/device/ab", authority: "localhost", headers: [], body: body)
        }
        #expect(client.unsentBodyBytes == 90_000)
        #expect(client.sendableBodyBytes == 65_535 - 90_000)

        // One flight without the server's answer: exactly the window goes out.
        try server.receive(client.takeOutput())
        #expect(client.unsentBodyBytes == 90_000 - 65_535)
        #expect(client.sendableBodyBytes == -(90_000 - 65_535))
        #expect(clientEvents.connectionWindowUpdates == 0)

        // The server's WINDOW_UPDATE (nghttp2 sends one once half the window
        // is consumed) frees the window; the rest goes out.
        try pump(client, server)
        #expect(clientEvents.connectionWindowUpdates >= 1)
        #expect(client.unsentBodyBytes == 0)
        #expect(client.sendableBodyBytes > 65_535 / 2)
        let received = serverEvents.pending.sorted { $0.streamID < $1.streamID }.map(\.body)
        #expect(received.count == bodies.count)
        #expect(received == bodies, "bodies arrived altered")
    }

    @Test("a server's larger connection window reaches the client as a WINDOW_UPDATE")
    func largerConnectionWindow() throws {
        let client = try HTTP2ClientSession(delegate: clientEvents)
        let server = try HTTP2ServerSession(delegate: serverEvents, connectionWindowSize: 1 << 20)
        try pump(client, server)
        #expect(clientEvents.connectionWindowUpdates == 1)
        #expect(client.sendableBodyBytes == 1 << 20)
    }

    @Test("a reset request's unsent body stops counting against the window")
    func resetReleasesBody() throws {
        let (client, server) = try makePair()
        let streamID = try client.submitRequest(path: "/3/device/ab", authority: "localhost", headers: [],
                                                body: [UInt8](repeating: 1, count: 5000))
        #expect(client.unsentBodyBytes == 5000)
        try client.submitRSTStream(id: streamID)
        #expect(client.unsentBodyBytes == 0)
        try pump(client, server)
        #expect(client.unsentBodyBytes == 0)
        #expect(client.sendableBodyBytes == 65_535)
    }

    @Test("a server announcing no limit leaves the client unlimited")
    func unlimitedConcurrency() throws {
        let (client, server) = try makePair(maxConcurrentStreams: nil)
        try pump(client, server)
        #expect(clientEvents.settings == [UInt32.max])
        #expect(client.remoteMaxConcurrentStreams == UInt32.max)
    }

    @Test("GOAWAY with last-stream-id 3: streams above are refused, streams at or below still complete")
    func goAwayRefusesStreamsAboveLastStreamID() throws {
        let (client, server) = try makePair()
        let ids = try (0..<5).map { index in
            try client.submitRequest(path: "/r/\(index)", authority: "localhost", headers: [], body: [1, 2, 3])
        }
        #expect(ids == [1, 3, 5, 7, 9])
        try pump(client, server)
        #expect(serverEvents.pending.count == 5)

        try server.submitGoAway(lastStreamID: 3, debugData: "maintenance")
        try pump(client, server)
        #expect(clientEvents.goAways.count == 1)
        #expect(clientEvents.goAways.first?.lastStreamID == 3)
        #expect(clientEvents.goAways.first?.errorCode == .noError)
        #expect(clientEvents.goAways.first?.debugData == "maintenance")
        #expect(clientEvents.closes.map(\.streamID) == [5, 7, 9])
        #expect(clientEvents.closes.allSatisfy { $0.errorCode == .refusedStream })
        #expect(client.isGoingAway)
        #expect(client.lastProcessedStreamID == 3)
        #expect(throws: HTTP2Error.newStreamsNotAllowed) {
            try client.submitRequest(path: "/late", authority: "localhost", headers: [], body: [])
        }
        // The server closed its side of those streams too.
        #expect(serverEvents.closes.map(\.streamID).sorted() == [5, 7, 9])
        #expect(serverEvents.closes.allSatisfy { $0.errorCode == .refusedStream })

        serverEvents.pending.removeAll { $0.streamID > 3 }
        try serverEvents.answerPending(server)
        try pump(client, server)
        #expect(clientEvents.closeCode(1) == .noError)
        #expect(clientEvents.closeCode(3) == .noError)
        #expect(clientEvents.responses.keys.sorted() == [1, 3])
        #expect(clientEvents.closeCounts == [1: 1, 3: 1, 5: 1, 7: 1, 9: 1])
        #expect(!client.wantsRead && !client.wantsWrite)
    }

    @Test("GOAWAY also refuses requests still queued behind the concurrency limit, at once and only once")
    func goAwayRefusesQueuedRequests() throws {
        let (client, server) = try makePair(maxConcurrentStreams: 2)
        try pump(client, server)  // the client learns the limit of 2
        let ids = try (0..<5).map { index in
            try client.submitRequest(path: "/q/\(index)", authority: "localhost", headers: [], body: [9])
        }
        try pump(client, server)
        #expect(serverEvents.pending.map(\.streamID) == [1, 3])

        try server.submitGoAway(lastStreamID: 3)
        try pump(client, server)
        #expect(clientEvents.closes.map(\.streamID) == [5, 7, 9])
        #expect(clientEvents.closes.allSatisfy { $0.errorCode == .refusedStream })

        try serverEvents.answerPending(server)
        try pump(client, server)
        #expect(serverEvents.requests.map(\.streamID) == [1, 3])
        #expect(Set(clientEvents.closes.map(\.streamID)) == Set(ids))
        #expect(clientEvents.closeCounts.values.allSatisfy { $0 == 1 })
        #expect(clientEvents.closeCode(1) == .noError && clientEvents.closeCode(3) == .noError)
        #expect(client.activeStreamCount == 0)
    }

    @Test("RST_STREAM from the server closes the client stream with its code", arguments: [
        HTTP2ErrorCode.cancel, .internalError, .refusedStream, .enhanceYourCalm, .unknown(0x42),
    ])
    func serverResetClosesStream(code: HTTP2ErrorCode) throws {
        let (client, server) = try makePair()
        serverEvents.onRequest = { session, request in
            try? session.submitRSTStream(id: request.streamID, errorCode: code)
        }
        let streamID = try client.submitRequest(path: "/reset", authority: "localhost", headers: [], body: [1])
        try pump(client, server)
        #expect(clientEvents.closes.count == 1)
        #expect(clientEvents.closeCode(streamID) == code)
        #expect(clientEvents.responses.isEmpty)
        #expect(serverEvents.closeCode(streamID) == code)
    }

    @Test("a client reset of a sent request and of a queued request each closes once with the code")
    func clientReset() throws {
        let (client, server) = try makePair(maxConcurrentStreams: 1)
        try pump(client, server)
        let sent = try client.submitRequest(path: "/a", authority: "localhost", headers: [], body: [1])
        let queued = try client.submitRequest(path: "/b", authority: "localhost", headers: [], body: [2])
        try pump(client, server)
        #expect(serverEvents.pending.map(\.streamID) == [sent])

        try client.submitRSTStream(id: queued, errorCode: .cancel)
        #expect(clientEvents.closes.map(\.streamID) == [queued])  // reported at once: never sent
        try client.submitRSTStream(id: sent, errorCode: .cancel)
        try pump(client, server)
        #expect(clientEvents.closeCounts == [sent: 1, queued: 1])
        #expect(clientEvents.closes.allSatisfy { $0.errorCode == .cancel })
        #expect(serverEvents.closeCode(sent) == .cancel)
        #expect(serverEvents.requests.count == 1)
        #expect(throws: HTTP2Error.invalidUse("stream \(sent) is not open")) {
            try client.submitRSTStream(id: sent)
        }
    }

    @Test("a response header list over 16 KiB resets the stream with CANCEL instead of being buffered")
    func responseHeaderCap() throws {
        let (client, server) = try makePair()
        serverEvents.answer = { _ in .init(status: 200, headers: [("x-big", String(repeating: "h", count: 20_000))]) }
        let streamID = try client.submitRequest(path: "/", authority: "localhost", headers: [], body: [])
        try pump(client, server)
        #expect(clientEvents.responses.isEmpty)
        #expect(clientEvents.closeCode(streamID) == .cancel)
        #expect(clientEvents.closes.count == 1)
    }

    @Test("PING is acknowledged with its payload")
    func pingAck() throws {
        let (client, server) = try makePair()
        try client.submitPing(payload: 0x0102_0304_0506_0708)
        try pump(client, server)
        #expect(clientEvents.pingAcks == [0x0102_0304_0506_0708])
    }

    @Test("a request body over the server's cap is reset with CANCEL and never delivered",
          arguments: [(1_000, true), (1_001, false), (4_096, false)])
    func serverBodyCap(size: Int, delivered: Bool) throws {
        let (client, server) = try makePair(maxRequestBodySize: 1_000)
        serverEvents.answer = { _ in .init() }
        let streamID = try client.submitRequest(path: "/big", authority: "localhost", headers: [],
                                                body: [UInt8](repeating: 7, count: size))
        try pump(client, server)
        #expect(serverEvents.requests.count == (delivered ? 1 : 0))
        #expect(clientEvents.closeCode(streamID) == (delivered ? .noError : .cancel))
        #expect(serverEvents.closeCode(streamID) == (delivered ? .noError : .cancel))
    }

    @Test("bodies of 4 KiB and 200 KB cross intact; a small window splits the response into many DATA frames")
    func largeBodies() throws {
        let (client, server) = try makePair(initialWindowSize: 1_024)
        let requestBody = pseudoRandomBytes(count: 4_096, seed: 1)
        let responseBody = pseudoRandomBytes(count: 4_096, seed: 2)
        let hugeBody = pseudoRandomBytes(count: 200_000, seed: 3)
        serverEvents.answer = { request in
            .init(status: 200, headers: [], body: request.path == "/huge" ? hugeBody : responseBody)
        }
        let small = try client.submitRequest(path: "/small", authority: "localhost", headers: [], body: requestBody)
        let huge = try client.submitRequest(path: "/huge", authority: "localhost", headers: [], body: requestBody)
        try pump(client, server)
        #expect(serverEvents.requests.map(\.body) == [requestBody, requestBody])
        #expect(clientEvents.bodies[small] == responseBody)
        #expect(clientEvents.bodies[huge] == hugeBody)
        // A 1,024-byte stream window forces at least 4,096 / 1,024 DATA frames.
        #expect((clientEvents.dataChunkCounts[small] ?? 0) >= 4)
        #expect(clientEvents.closeCode(small) == .noError && clientEvents.closeCode(huge) == .noError)
    }

    @Test("the delegate may submit the next request from inside a close callback")
    func submitFromCallback() throws {
        let (client, server) = try makePair()
        serverEvents.answer = { _ in .init() }
        var chained: [Int32] = []
        clientEvents.onClose = { session, _, _ in
            if chained.count < 10, let next = try? session.submitRequest(
                path: "/next", authority: "localhost", headers: [], body: [1]) {
                chained.append(next)
            }
        }
        _ = try client.submitRequest(path: "/first", authority: "localhost", headers: [], body: [1])
        try pump(client, server)
        #expect(chained.count == 10)
        #expect(clientEvents.closes.count == 11)
        #expect(clientEvents.closes.allSatisfy { $0.errorCode == .noError })
    }

    @Test("a header HTTP/2 forbids is refused before anything is queued", arguments: [
        ("Apns-Topic", "x"), ("connection", "close"), ("apns-topic", "a\r\nb"), (":path", "/x"), ("", "x"),
    ])
    func refusesInvalidHeaders(name: String, value: String) throws {
        let (client, _) = try makePair()
        #expect(throws: HTTP2Error.self) {
            try client.submitRequest(path: "/x", authority: "localhost", headers: [(name, value)], body: [])
        }
        #expect(client.activeStreamCount == 0)
    }

    @Test("garbage from the server is a connection error, after which the session is dead", arguments: [
        Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8),
        [UInt8](repeating: 0xff, count: 64),
    ])
    func garbageIsConnectionError(garbage: [UInt8]) throws {
        let client = try HTTP2ClientSession(delegate: clientEvents)
        _ = client.takeOutput()
        let error = #expect(throws: HTTP2Error.self) {
            try client.receive(garbage)
        }
        #expect(error == .connectionError(errorCode: .protocolError, reason: "SETTINGS expected"))
        #expect(client.failure == error)
        #expect(!client.wantsRead)
        // The GOAWAY nghttp2 queued is still handed out for the peer.
        #expect(!client.takeOutput().isEmpty)
        #expect(throws: HTTP2Error.sessionClosed) {
            try client.receive(garbage)
        }
        #expect(throws: HTTP2Error.sessionClosed) {
            try client.submitRequest(path: "/", authority: "localhost", headers: [], body: [])
        }
    }

    @Test("a frame that breaks the protocol mid-connection fails the session with its error code")
    func protocolViolationAfterHandshake() throws {
        let (client, server) = try makePair()
        try pump(client, server)
        // DATA on stream 0 is a connection error of type PROTOCOL_ERROR (RFC 9113 §6.1).
        let dataOnStreamZero: [UInt8] = [0, 0, 1, 0x0, 0x0, 0, 0, 0, 0, 0x41]
        let error = #expect(throws: HTTP2Error.self) {
            try client.receive(dataOnStreamZero)
        }
        guard case .connectionError(let code, _) = error else {
            Issue.record("expected a connection error, got \(String(describing: error))")
            return
        }
        #expect(code == .protocolError)
    }

    @Test("graceful GOAWAY from the client: open streams finish, new requests are refused")
    func clientGoAway() throws {
        let (client, server) = try makePair()
        let streamID = try client.submitRequest(path: "/a", authority: "localhost", headers: [], body: [1])
        try pump(client, server)
        try client.submitGoAway()
        #expect(client.isGoingAway)
        #expect(throws: HTTP2Error.newStreamsNotAllowed) {
            try client.submitRequest(path: "/b", authority: "localhost", headers: [], body: [])
        }
        try pump(client, server)
        try serverEvents.answerPending(server)
        try pump(client, server)
        #expect(clientEvents.closeCode(streamID) == .noError)
        #expect(!client.wantsRead && !client.wantsWrite)
    }

    @Test("terminate sends GOAWAY and then nothing more")
    func terminateStopsSession() throws {
        let (client, server) = try makePair()
        try pump(client, server)
        try client.terminate(errorCode: .internalError)
        let goAway = client.takeOutput()
        #expect(goAway.count == 9 + 8)  // frame header + last-stream-id + error code
        #expect(goAway[3] == 0x7)  // GOAWAY frame type
        #expect(Array(goAway[13..<17]) == [0, 0, 0, 2])  // INTERNAL_ERROR
        #expect(!client.wantsRead && !client.wantsWrite)
        #expect(client.takeOutput().isEmpty)
    }

    @Test("an initial window size above 2^31-1 is refused")
    func refusesOversizedWindow() {
        #expect(throws: HTTP2Error.self) {
            try HTTP2ClientSession(delegate: clientEvents, initialWindowSize: UInt32(Int32.max) + 1)
        }
    }

    @Test("a never-indexed field goes out literally every time and stays out of the HPACK table")
    func neverIndexedField() throws {
        let (client, server) = try makePair()
        try pump(client, server)
        let id = "7A0C2B1E-0000-4000-8000-000000000001"
        /// Bytes of the HEADERS frame for one request carrying `x-id: id`.
        func headersSize(neverIndexed: Bool) throws -> Int {
            _ = try client.submitRequest(
                path: "/3/device/x", authority: "localhost",
                fields: [HTTPField(name: "apns-topic", value: "cx.c3.toot"),
                         HTTPField(name: "x-id", value: id, neverIndexed: neverIndexed)],
                body: [])
            let bytes = client.takeOutput()
            try server.receive(bytes)
            _ = server.takeOutput()
            return bytes.count
        }
        let first = try headersSize(neverIndexed: true)
        let second = try headersSize(neverIndexed: true)
        // Had either been indexed, this one would be a one-byte reference.
        let firstIndexed = try headersSize(neverIndexed: false)
        let secondIndexed = try headersSize(neverIndexed: false)
        #expect(second >= id.utf8.count && firstIndexed >= second - 1)
        // (36 characters are about 27 bytes once Huffman-coded; a reference is 1.)
        #expect(secondIndexed + 16 < firstIndexed, "an indexed value is a reference the second time")
        #expect(first >= second)
        #expect(serverEvents.requests.count == 4)
        #expect(serverEvents.requests.allSatisfy { $0.header("x-id") == id && $0.header("apns-topic") == "cx.c3.toot" })
    }

    @Test("the request header storage is reused: a shorter request after a longer one carries only its own fields")
    func reusedRequestStorage() throws {
        let (client, server) = try makePair()
        serverEvents.answer = { _ in .init() }
        _ = try client.submitRequest(path: "/long/path/with/more", authority: "localhost",
                                     headers: [("a", "1"), ("b", "2"), ("c", "3")], body: [1])
        // A refused field must not leave anything behind for the next request.
        #expect(throws: HTTP2Error.self) {
            try client.submitRequest(path: "/x", authority: "localhost", headers: [("Bad", "1")], body: [])
        }
        _ = try client.submitRequest(path: "/s", authority: "localhost", headers: [("d", "4")], body: [2])
        try pump(client, server)
        #expect(serverEvents.requests.map(\.path) == ["/long/path/with/more", "/s"])
        #expect(serverEvents.requests.map { $0.headers.map(\.name) } == [["a", "b", "c"], ["d"]])
        #expect(serverEvents.requests.last?.header("d") == "4")
    }
}
