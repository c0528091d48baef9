// Test support: a client session wired to a server session in memory, and
// delegates that record what they are told.
@testable import HTTP2
import HTTPCore

extension HTTP2Session {
    /// Every byte waiting to be sent (empty when none).
    func takeOutput() -> [UInt8] {
        var buffer: [UInt8] = []
        takeOutput(into: &buffer)
        return buffer
    }
}

extension HTTP2ClientSession {
    /// `submitRequest` with plain (name, value) pairs, none never-indexed.
    func submitRequest(method: String = "POST", path: String, authority: String, scheme: String = "https",
                       headers: [(name: String, value: String)], body: [UInt8]) throws(HTTP2Error) -> Int32 {
        try submitRequest(method: method, path: path, authority: authority, scheme: scheme,
                          fields: headers.lazy.map { HTTPField(name: $0.name, value: $0.value) }, body: body)
    }
}

struct NotQuiet: Error, CustomStringConvertible {
    let rounds: Int
    var description: String { "sessions still exchanging bytes after \(rounds) rounds" }
}

final class ClientRecorder: HTTP2ClientSessionDelegate {
    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    }

    var responses: [Int32: Response] = [:]
    var bodies: [Int32: [UInt8]] = [:]
    var dataChunkCounts: [Int32: Int] = [:]
    var closes: [(streamID: Int32, errorCode: HTTP2ErrorCode)] = []
    var settings: [UInt32] = []
    var goAways: [(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: String)] = []
    var pingAcks: [UInt64] = []
    /// Runs inside `streamDidClose`, after recording.
    var onClose: ((HTTP2ClientSession, Int32, HTTP2ErrorCode) -> Void)?

    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int,
                 fields: HTTP2HeaderFields, streamID: Int32) {
        responses[streamID] = Response(status: status, headers: Array(fields))
    }

    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        bodies[streamID, default: []].append(contentsOf: bytes)
        dataChunkCounts[streamID, default: 0] += 1
    }

    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
        closes.append((streamID, errorCode))
        onClose?(session, streamID, errorCode)
    }

    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {
        settings.append(maxConcurrentStreams)
    }

    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32,
                 errorCode: HTTP2ErrorCode, debugData: String) {
        goAways.append((lastStreamID, errorCode, debugData))
    }

    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64) {
        pingAcks.append(payload)
    }

    var connectionWindowUpdates = 0

    func sessionConnectionWindowOpened(_ session: HTTP2ClientSession) {
        connectionWindowUpdates += 1
    }

    /// How many times each stream was reported closed.
    var closeCounts: [Int32: Int] {
        closes.reduce(into: [:]) { $0[$1.streamID, default: 0] += 1 }
    }

    func closeCode(_ streamID: Int32) -> HTTP2ErrorCode? {
        closes.first { $0.streamID == streamID }?.errorCode
    }
}

final class ServerRecorder: HTTP2ServerSessionDelegate {
    struct Answer {
        var status = 200
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    /// When set, every request is answered inside `didReceiveRequest`;
    /// otherwise requests wait in `pending` until `answerPending`.
    var answer: ((HTTP2Request) -> Answer)?
    /// When set, runs instead of `answer` (e.g. to reset the stream).
    var onRequest: ((HTTP2ServerSession, HTTP2Request) -> Void)?
    var requests: [HTTP2Request] = []
    var pending: [HTTP2Request] = []
    var closes: [(streamID: Int32, errorCode: HTTP2ErrorCode)] = []

    func session(_ session: HTTP2ServerSession, didReceiveRequest request: HTTP2Request) {
        requests.append(request)
        if let onRequest {
            onRequest(session, request)
        } else if let answer {
            let reply = answer(request)
            try? session.submitResponse(streamID: request.streamID, status: reply.status,
                                        headers: reply.headers, body: reply.body)
        } else {
            pending.append(request)
        }
    }

    func session(_ session: HTTP2ServerSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
        closes.append((streamID, errorCode))
    }

    /// Answers every waiting request with `status` and an `apns-id` echoing the stream id.
    func answerPending(_ session: HTTP2ServerSession, status: Int = 200) throws {
        let waiting = pending
        pending.removeAll()
        for request in waiting {
            try session.submitResponse(streamID: request.streamID, status: status,
                                       headers: [("apns-id", "id-\(request.streamID)")], body: [])
        }
    }

    func closeCode(_ streamID: Int32) -> HTTP2ErrorCode? {
        closes.first { $0.streamID == streamID }?.errorCode
    }
}

/// Moves bytes both ways until neither session has anything to send.
/// `observe` runs after every delivery to the server. Returns the rounds used.
@discardableResult
func pump(_ client: HTTP2ClientSession, _ server: HTTP2ServerSession, maxRounds: Int = 10_000,
          observe: () -> Void = {}) throws -> Int {
    for round in 0..<maxRounds {
        let toServer = client.takeOutput()
        if !toServer.isEmpty {
            try server.receive(toServer)
            observe()
        }
        let toClient = server.takeOutput()
        if !toClient.isEmpty {
            try client.receive(toClient)
        }
        if toServer.isEmpty && toClient.isEmpty { return round }
    }
    throw NotQuiet(rounds: maxRounds)
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

// Passing a `throws(HTTP2Error)` closure to `withUnsafeBytes` crashes the
// Swift 6.3.1 compiler (IRGen of the reabstraction thunk), so tests feed
// arrays through these non-throwing-closure helpers.
extension HTTP2Session {
    func receive(_ bytes: [UInt8]) throws(HTTP2Error) {
        var failure: HTTP2Error?
        bytes.withUnsafeBytes { buffer in
            do throws(HTTP2Error) { try receive(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }
}

extension NGHTTP2Session {
    func receive(_ bytes: [UInt8]) throws(HTTP2Error) {
        var failure: HTTP2Error?
        bytes.withUnsafeBytes { buffer in
            do throws(HTTP2Error) { try receive(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }
}
