import Testing

@testable import HTTPCore

typealias Machine = HTTP1ConnectionMachine
private let timeouts = Machine.Timeouts(header: .seconds(10), body: .seconds(11), keepAlive: .seconds(75))

private func makeMachine(maxHeaderBytes: Int = 16384, maxBodyBytes: Int = 8192) -> Machine {
    Machine(limits: HTTP1Limits(maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes), timeouts: timeouts)
}

/// The machine's events, each returning a fresh array (the connection
/// appends to one array it keeps; tests read each event's actions alone).
extension Machine {
    mutating func start() -> [Action] { collect { $0.start(into: &$1) } }

    mutating func bytesAvailable(_ buffer: UnsafeRawBufferPointer) -> [Action] {
        collect { $0.bytesAvailable(buffer, into: &$1) }
    }

    mutating func responseReady(_ response: HTTP1Response, hasBufferedInput: Bool = false) -> [Action] {
        collect { $0.responseReady(response, hasBufferedInput: hasBufferedInput, into: &$1) }
    }

    mutating func writeCompleted(buffered: UnsafeRawBufferPointer) -> [Action] {
        collect { $0.writeCompleted(buffered: buffered, into: &$1) }
    }

    mutating func timerFired(_ kind: TimerKind) -> [Action] { collect { $0.timerFired(kind, into: &$1) } }

    mutating func peerClosed() -> [Action] { collect { $0.peerClosed(into: &$1) } }

    mutating func shutdown() -> [Action] { collect { $0.shutdown(into: &$1) } }

    private mutating func collect(_ event: (inout Self, inout [Action]) -> Void) -> [Action] {
        var actions: [Action] = []
        event(&self, &actions)
        return actions
    }

    mutating func feed(_ text: String) -> [Action] {
        Array(text.utf8).withUnsafeBytes { bytesAvailable($0) }
    }

    mutating func written(_ buffered: String = "") -> [Action] {
        Array(buffered.utf8).withUnsafeBytes { writeCompleted(buffered: $0) }
    }

    /// The state without its payload.
    var phase: Phase {
        switch state {
        case .idle: .idle
        case .lastCall: .lastCall
        case .readingHead: .readingHead
        case .readingBody: .readingBody
        case .awaitingResponse: .awaitingResponse
        case .writing: .writing
        case .closed: .closed
        }
    }

    enum Phase: Equatable { case idle, lastCall, readingHead, readingBody, awaitingResponse, writing, closed }
}

private func sentText(_ actions: [Machine.Action]) -> String? {
    for case .send(let bytes) in actions { return String(decoding: bytes, as: UTF8.self) }
    return nil
}

private func dispatched(_ actions: [Machine.Action]) -> HTTP1Request? {
    for case .dispatch(let request) in actions { return request }
    return nil
}

private let simpleGet = "GET /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n"

@Suite("HTTP/1 connection lifecycle")
struct HTTP1ConnectionMachineTests {
    @Test("a new connection arms the header timer")
    func startArmsHeaderTimer() {
        var machine = makeMachine()
        #expect(machine.start() == [.armTimer(.header, .seconds(10))])
        #expect(machine.phase == .idle)
        #expect(machine.wantsInput)
    }

    @Test("a complete request is consumed, the timer cancelled and the request dispatched")
    func completeRequestDispatches() throws {
        var machine = makeMachine()
        _ = machine.start()
        let actions = machine.feed(simpleGet)
        #expect(actions.count == 3)
        #expect(actions[0] == .consume(simpleGet.utf8.count))
        #expect(actions[1] == .cancelTimer)
        let request = try #require(dispatched(actions))
        #expect(request.method == "GET")
        #expect(machine.phase == .awaitingResponse)
        #expect(!machine.wantsInput)
    }

    @Test("keep-alive: after the answer is written the keep-alive timer runs")
    func keepAliveCycle() throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(simpleGet)
        let sent = try #require(sentText(machine.responseReady(HTTP1Response(status: 200, body: "OK"))))
        #expect(sent.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(!sent.contains("Connection: close"))
        #expect(machine.phase == .writing)
        #expect(machine.written() == [.armTimer(.keepAlive, .seconds(75))])
        #expect(machine.phase == .idle)
        #expect(machine.requestsServed == 1)
        // The next request's first byte replaces the keep-alive timer.
        let next = machine.feed("GET / HTTP/1.1\r\n")
        #expect(next == [.armTimer(.header, .seconds(10))])
        #expect(machine.phase == .readingHead)
    }

    @Test("a response that closes the connection says so and closes it, though the request kept it alive")
    func responseClosesConnection() throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(simpleGet)
        var response = HTTP1Response(status: 200, body: "OK")
        response.closesConnection = true
        let sent = try #require(sentText(machine.responseReady(response)))
        #expect(sent.contains("\r\nConnection: close\r\n"))
        #expect(machine.written() == [.close])
        #expect(machine.state == .closed(afterResponse: true))
    }

    @Test("pipelined requests: the second waits until the first answer is written")
    func pipelinedInOrder() throws {
        var machine = makeMachine()
        _ = machine.start()
        let both = simpleGet + "GET /other HTTP/1.1\r\nHost: x\r\n\r\n"
        let first = machine.feed(both)
        #expect(first.first == .consume(simpleGet.utf8.count))
        #expect(dispatched(first)?.target == "/relay-to/_health")
        // More bytes while awaiting the answer are not parsed.
        #expect(machine.feed("GET /other HTTP/1.1\r\nHost: x\r\n\r\n") == [])
        _ = machine.responseReady(HTTP1Response(status: 200))
        let second = machine.written("GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(dispatched(second)?.target == "/other")
    }

    @Test("Connection: close and HTTP/1.0 without keep-alive close after the answer",
          arguments: [
              "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
              "GET / HTTP/1.0\r\n\r\n",
          ])
    func closesAfterAnswer(request: String) throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(request)
        let sent = try #require(sentText(machine.responseReady(HTTP1Response(status: 404, body: "x"))))
        #expect(sent.contains("Connection: close\r\n"))
        #expect(machine.written() == [.close])
        #expect(machine.closedAfterResponse)
    }

    @Test("HTTP/1.0 with keep-alive stays open and says so")
    func http10KeepAlive() throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let sent = try #require(sentText(machine.responseReady(HTTP1Response(status: 404))))
        #expect(sent.contains("Connection: keep-alive\r\n"))
        #expect(machine.written() == [.armTimer(.keepAlive, .seconds(75))])
    }

    @Test("HEAD gets the headers without the body")
    func headHasNoBody() throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed("HEAD /relay-to/_health HTTP/1.1\r\nHost: x\r\n\r\n")
        let sent = try #require(sentText(machine.responseReady(HTTP1Response(status: 200, body: "OK"))))
        #expect(sent.contains("Content-Length: 2\r\n"))
        #expect(sent.hasSuffix("\r\n\r\n"))
    }

    @Test("Expect: 100-continue is answered once, then the body timer runs")
    func expectContinue() throws {
        var machine = makeMachine()
        _ = machine.start()
        let head = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"
        let first = machine.feed(head)
        #expect(first.contains(.armTimer(.body, .seconds(11))))
        #expect(sentText(first) == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(machine.phase == .readingBody)
        #expect(machine.feed(head + "ab") == [])
        let done = machine.feed(head + "abcd")
        #expect(dispatched(done)?.body == Array("abcd".utf8))
    }

    @Test("a head split across reads switches to the body timer once the blank line arrives")
    func headThenBodyTimer() {
        var machine = makeMachine()
        _ = machine.start()
        var text = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
        #expect(machine.feed(text) == [])
        #expect(machine.phase == .readingHead)
        text += "\r"
        #expect(machine.feed(text) == [])
        text += "\n"
        #expect(machine.feed(text) == [.armTimer(.body, .seconds(11))])
        #expect(machine.phase == .readingBody)
    }

    @Test("fed a byte at a time, the body timer starts once, with the byte that ends the head", arguments: [
        "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab",
        "\r\n\nPOST /x HTTP/1.1\nHost: x\nContent-Length: 4\n\nab",
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nab",
    ])
    func bodyTimerAtHeadEnd(input: String) {
        var machine = makeMachine()
        _ = machine.start()
        let bytes = Array(input.utf8)
        let headLength = bytes.count - 2
        for length in 1...bytes.count {
            let actions = Array(bytes[0..<length]).withUnsafeBytes { machine.bytesAvailable($0) }
            #expect(actions.contains(.armTimer(.body, .seconds(11))) == (length == headLength), "at \(length) bytes")
            #expect(machine.phase == (length < headLength ? .readingHead : .readingBody), "at \(length) bytes")
        }
    }

    @Test("empty lines before the request line do not count as the end of the head")
    func leadingEmptyLines() {
        var machine = makeMachine()
        _ = machine.start()
        #expect(machine.feed("\r\n\r\nPOST /x HTTP/1.1\r\n") == [])
        #expect(machine.phase == .readingHead)
    }

    @Test("malformed or oversized requests get their status and close",
          arguments: [
              ("BROKEN\r\n\r\n", 400),
              ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 99999\r\n\r\n", 413),
              ("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
              ("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 2000) + "\r\n\r\n", 431),
          ])
    func invalidRequests(request: String, status: Int) throws {
        var machine = makeMachine(maxHeaderBytes: 1024, maxBodyBytes: 1024)
        _ = machine.start()
        let actions = machine.feed(request)
        #expect(actions.first == .cancelTimer)
        #expect(actions.contains { if case .refused(status, _) = $0 { true } else { false } })
        let sent = try #require(sentText(actions))
        #expect(sent.hasPrefix("HTTP/1.1 \(status) "))
        #expect(sent.contains("Connection: close\r\n"))
        #expect(machine.phase == .writing)
        #expect(!machine.wantsInput)
        #expect(machine.written() == [.close])
    }

    @Test("timers: header and body answer 408 and close; keep-alive closes silently",
          arguments: [
              ("", Machine.TimerKind.header, 408),
              ("GET / HTTP/1.1\r\n", .header, 408),
              ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab", .body, 408),
          ])
    func timeouts408(input: String, timer: Machine.TimerKind, status: Int) throws {
        var machine = makeMachine()
        _ = machine.start()
        if !input.isEmpty { _ = machine.feed(input) }
        let sent = try #require(sentText(machine.timerFired(timer)))
        #expect(sent.hasPrefix("HTTP/1.1 408 "))
        #expect(machine.written() == [.close])
    }

    @Test("an idle keep-alive connection closes silently when its timer fires")
    func keepAliveTimeout() {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(simpleGet)
        _ = machine.responseReady(HTTP1Response(status: 200))
        _ = machine.written()
        #expect(machine.timerFired(.keepAlive) == [.close])
        #expect(!machine.closedAfterResponse)
    }

    @Test("a stale timer is ignored")
    func staleTimer() {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(simpleGet)
        #expect(machine.timerFired(.header) == [])
        #expect(machine.timerFired(.keepAlive) == [])
    }

    @Test("peer EOF: before a request closes; while awaiting the answer, it is still sent, then close")
    func peerClosed() throws {
        var idle = makeMachine()
        _ = idle.start()
        #expect(idle.peerClosed() == [.cancelTimer, .close])

        var waiting = makeMachine()
        _ = waiting.start()
        _ = waiting.feed(simpleGet)
        #expect(waiting.peerClosed() == [])
        let sent = try #require(sentText(waiting.responseReady(HTTP1Response(status: 201))))
        #expect(sent.contains("Connection: close"))
        #expect(waiting.written() == [.close])
    }

    @Test("peer EOF after pipelined requests: each buffered request is answered, then close")
    func halfCloseAfterPipelining() throws {
        var machine = makeMachine()
        _ = machine.start()
        let second = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
        _ = machine.feed(simpleGet + second)
        #expect(machine.peerClosed() == [])
        let first = try #require(sentText(machine.responseReady(HTTP1Response(status: 200), hasBufferedInput: true)))
        #expect(!first.contains("Connection: close"))
        #expect(dispatched(machine.written(second))?.target == "/b")
        let last = try #require(sentText(machine.responseReady(HTTP1Response(status: 200), hasBufferedInput: false)))
        #expect(last.contains("Connection: close"))
        #expect(machine.written() == [.close])
    }

    @Test("peer EOF with a partial request buffered behind an answered one: close after the answer")
    func halfCloseWithPartialRequest() throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(simpleGet + "GET /b HT")
        _ = machine.peerClosed()
        _ = machine.responseReady(HTTP1Response(status: 200), hasBufferedInput: true)
        let actions = machine.written("GET /b HT")
        #expect(actions.last == .close)
        #expect(machine.phase == .closed)
    }

    @Test("shutdown: a request in progress is answered with Connection: close")
    func shutdown() throws {
        var busy = makeMachine()
        _ = busy.start()
        _ = busy.feed(simpleGet)
        #expect(busy.shutdown() == [])
        let sent = try #require(sentText(busy.responseReady(HTTP1Response(status: 201))))
        #expect(sent.contains("Connection: close"))
        #expect(busy.written() == [.close])

        var writing = makeMachine()
        _ = writing.start()
        _ = writing.feed(simpleGet)
        _ = writing.responseReady(HTTP1Response(status: 200))
        #expect(writing.shutdown() == [])
        #expect(writing.written() == [.close])
    }

    @Test("shutdown: an idle keep-alive connection takes a last request, answered with Connection: close, then closes")
    func shutdownLastCall() throws {
        func idle() -> Machine {
            var machine = makeMachine()
            _ = machine.start()
            _ = machine.feed(simpleGet)
            _ = machine.responseReady(HTTP1Response(status: 200))
            #expect(machine.written() == [.armTimer(.keepAlive, .seconds(75))])
            return machine
        }
        var quiet = idle()
        #expect(quiet.shutdown() == [.armTimer(.keepAlive, .seconds(1))])
        #expect(quiet.phase == .lastCall)
        #expect(quiet.shutdown() == [])
        // Nothing came: a silent close, as a keep-alive timeout.
        #expect(quiet.timerFired(.keepAlive) == [.close])
        #expect(quiet.state == .closed(afterResponse: false))

        var busy = idle()
        _ = busy.shutdown()
        let actions = busy.feed(simpleGet)
        #expect(actions.first == .armTimer(.header, .seconds(10)))
        #expect(dispatched(actions) != nil)
        let sent = try #require(sentText(busy.responseReady(HTTP1Response(status: 201))))
        #expect(sent.contains("Connection: close"))
        #expect(busy.written() == [.close])

        // A head that arrives in pieces has the header timer, not the last call's.
        var slow = idle()
        _ = slow.shutdown()
        #expect(slow.feed("GET / HT") == [.armTimer(.header, .seconds(10))])
        #expect(slow.timerFired(.keepAlive) == [])
        #expect(slow.phase == .readingHead)

        var gone = idle()
        _ = gone.shutdown()
        #expect(gone.peerClosed() == [.cancelTimer, .close])

        // Never longer than the keep-alive timeout itself.
        var short = Machine(limits: HTTP1Limits(), timeouts: .init(keepAlive: .milliseconds(300)))
        _ = short.start()
        _ = short.feed(simpleGet)
        _ = short.responseReady(HTTP1Response(status: 200))
        _ = short.written()
        #expect(short.shutdown() == [.armTimer(.keepAlive, .milliseconds(300))])
    }

    @Test("shutdown before a new connection's first request waits for it, answers it with Connection: close")
    func shutdownBeforeTheFirstRequest() throws {
        var fresh = makeMachine()
        #expect(fresh.start() == [.armTimer(.header, .seconds(10))])
        // Accepted from the backlog: its request is on its way.
        #expect(fresh.shutdown() == [])
        #expect(fresh.phase == .readingHead)
        let request = try #require(dispatched(fresh.feed(simpleGet)))
        #expect(request.target == "/relay-to/_health")
        let sent = try #require(sentText(fresh.responseReady(HTTP1Response(status: 201))))
        #expect(sent.contains("Connection: close"))
        #expect(fresh.written() == [.close])

        // A sender that never sends is still bounded by the header timer
        // armed at the start.
        var silent = makeMachine()
        _ = silent.start()
        _ = silent.shutdown()
        #expect(sentText(silent.timerFired(.header))?.hasPrefix("HTTP/1.1 408 ") == true)
        #expect(silent.written() == [.close])
    }

    @Test("a completed write that is not a response's changes nothing",
          arguments: ["", "GET / HTTP/1.1\r\n", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"])
    func writeWithoutResponse(input: String) {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(input)
        let before = machine.state
        // 100 Continue (or nothing) went out: still reading the request.
        #expect(machine.written(input) == [])
        #expect(machine.state == before)
    }

    @Test("a response for no pending request stops the process, naming the state")
    func unexpectedResponse() async {
        await #expect(processExitsWith: .failure) {
            var machine = HTTP1ConnectionMachine(limits: HTTP1Limits(), timeouts: .init())
            _ = machine.start()
            _ = machine.responseReady(HTTP1Response(status: 200))
        }
    }

    /// Shutdown or EOF while a request is in some phase, then the answer:
    /// whether it says `Connection: close`, and what follows its write.
    @Test("shutdown and EOF are remembered by the phase they arrive in", arguments: [
        // (input before, event, answer closes, actions after the write)
        ("GET / HTTP/1.1\r\n", Event.shutdown, true, [Machine.Action.close]),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n", .shutdown, true, [.close]),
        (simpleGet, .shutdown, true, [.close]),
        (simpleGet, .peerClosed, true, [.close]),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", .shutdown, true, [.close]),
    ])
    func rememberedUntilAnswer(input: String, event: Event, closes: Bool, afterWrite: [Machine.Action]) throws {
        var machine = makeMachine()
        _ = machine.start()
        _ = machine.feed(input)
        switch event {
        case .shutdown: #expect(machine.shutdown() == [])
        case .peerClosed: #expect(machine.peerClosed() == [])
        default: Issue.record("not a table event: \(event)")
        }
        if machine.phase != .awaitingResponse {
            let complete = input.hasPrefix("POST") ? input + "ab" : input + "Host: x\r\n\r\n"
            #expect(dispatched(machine.feed(complete)) != nil)
        }
        let sent = try #require(sentText(machine.responseReady(HTTP1Response(status: 200))))
        #expect(sent.contains("Connection: close") == closes)
        #expect(machine.written() == afterWrite)
        #expect(machine.state == .closed(afterResponse: true))
    }

    @Test("the state stays small and inline: no allocation per request for its payloads")
    func stateIsSmall() {
        // DispatchedRequest, the largest payload: a version and four flags.
        #expect(MemoryLayout<Machine.State>.size <= 16)
    }

    @Test("EOF or shutdown asked again changes nothing")
    func repeatedEvents() {
        var waiting = makeMachine()
        _ = waiting.start()
        _ = waiting.feed(simpleGet)
        _ = waiting.peerClosed()
        let state = waiting.state
        #expect(waiting.peerClosed() == [])
        #expect(waiting.shutdown() == [])
        #expect(waiting.phase == .awaitingResponse)
        #expect(state != waiting.state)  // shutdown is remembered too

        var closed = makeMachine()
        _ = closed.start()
        _ = closed.peerClosed()
        #expect(closed.peerClosed() == [])
        #expect(closed.shutdown() == [])
        #expect(closed.timerFired(.header) == [])
        #expect(closed.state == .closed(afterResponse: false))
    }

    /// One event, given to a machine through both forms.
    enum Event: Sendable, CustomTestStringConvertible {
        case start, bytes(String), response(Int), written(String), timer(Machine.TimerKind), peerClosed, shutdown
        var testDescription: String { "\(self)" }
    }

    @Test("the into: forms append to the caller's array exactly what the returning forms return", arguments: [
        [Event.start, .bytes(simpleGet), .response(200), .written(""), .bytes("GET / HTTP/1.1\r\n"),
         .bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), .response(204), .written(""), .timer(.keepAlive)],
        [Event.start, .bytes(simpleGet + simpleGet), .response(200), .written(simpleGet), .response(200),
         .shutdown, .written("")],
        [Event.start, .bytes("GET / HTTP/1.1\r\n"), .timer(.header)],
        [Event.start, .bytes("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab"), .timer(.body)],
        [Event.start, .bytes("BAD\r\n\r\n"), .written("")],
        [Event.start, .bytes(simpleGet), .peerClosed, .response(200), .written("")],
        [Event.start, .shutdown],
        [Event.start, .shutdown, .bytes(simpleGet), .response(200), .written("")],
        [Event.start, .bytes(simpleGet), .response(200), .written(""), .shutdown, .timer(.keepAlive)],
        [Event.start, .bytes(simpleGet), .response(200), .written(""), .shutdown, .bytes(simpleGet), .response(200),
         .written("")],
    ])
    func intoFormsMatch(events: [Event]) {
        var returning = makeMachine()
        var appending = makeMachine()
        // Appending must keep what the array already holds.
        var collected: [Machine.Action] = [.consume(-1)]
        for event in events {
            let before = collected.count
            let expected: [Machine.Action]
            switch event {
            case .start:
                expected = returning.start()
                appending.start(into: &collected)
            case .bytes(let text):
                expected = returning.feed(text)
                Array(text.utf8).withUnsafeBytes { appending.bytesAvailable($0, into: &collected) }
            case .response(let status):
                expected = returning.responseReady(HTTP1Response(status: status))
                appending.responseReady(HTTP1Response(status: status), into: &collected)
            case .written(let text):
                expected = returning.written(text)
                Array(text.utf8).withUnsafeBytes { appending.writeCompleted(buffered: $0, into: &collected) }
            case .timer(let kind):
                expected = returning.timerFired(kind)
                appending.timerFired(kind, into: &collected)
            case .peerClosed:
                expected = returning.peerClosed()
                appending.peerClosed(into: &collected)
            case .shutdown:
                expected = returning.shutdown()
                appending.shutdown(into: &collected)
            }
            #expect(Array(collected[before...]) == expected, "\(event)")
            #expect(appending.state == returning.state, "\(event)")
        }
        #expect(collected.first == .consume(-1))
    }
}

@Suite("A listener that closes on slow requests")
struct SilentTimeoutTests {
    static let refusals = HTTP1Refusals.plainText.closingSilentlyOnTimeouts()

    @Test("a head or body that does not arrive in time closes the connection without an answer, logged as a 408",
          arguments: [("POST /x HTTP/1.1\r\nHost: a\r\n", HTTP1ConnectionMachine.TimerKind.header, "head"),
                      ("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc", .body, "body")])
    func slowRequestClosesSilently(_ example: (bytes: String, timer: HTTP1ConnectionMachine.TimerKind, part: String)) {
        var machine = HTTP1ConnectionMachine(limits: HTTP1Limits(), timeouts: .init(), refusals: Self.refusals)
        _ = machine.start()
        _ = Array(example.bytes.utf8).withUnsafeBytes { machine.bytesAvailable($0) }
        let actions = machine.timerFired(example.timer)
        #expect(actions == [.refused(status: 408, reason: "request \(example.part) not received in time: closed without an answer"),
                            .close])
    }

    @Test("the default still answers 408, for clients that read it")
    func defaultAnswers408() {
        var machine = HTTP1ConnectionMachine(limits: HTTP1Limits(), timeouts: .init())
        _ = machine.start()
        let actions = machine.timerFired(.header)
        #expect(actions.contains { if case .send(let bytes) = $0 { String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408") } else { false } })
    }
}
