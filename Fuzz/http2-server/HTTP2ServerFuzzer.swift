// Fuzz target http2-server: what an HTTP/2 client of the API port sends,
// through the server session (nghttp2) to the requests the listener's
// handler gets (`HTTP2Exchange`), every request answered at once.
//
// Input: [flags][pieces seed] then the bytes a client sends. flags:
// - bit 0: the client preface and an empty SETTINGS come first (else the
//   input must bring its own preface);
// - bit 1: small limits (header list 256 bytes, body 64 bytes), else the
//   API's defaults (16 KiB, 1 MiB);
// - bit 2: also fed in pieces, their sizes drawn from the seed.
//
// Checked (a trap on violation): never a crash; every request delivered
// has a method, a body within the limit and a header list within it, and
// becomes an HTTP/1.1 request with the same method, target and body, a
// `host` (from `:authority` when it sent none) and no client certificate;
// the session never holds more streams than SETTINGS_MAX_CONCURRENT_STREAMS
// once its output is taken; resets counted are at most the RST_STREAM
// frames the input could hold; fed in pieces, a session that survives both
// ways, open to the end, delivers the same requests.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `http2-server-fuzzer <input file>…` runs the same checks on each file.

import FuzzSupport
import HTTP2
import HTTP2Server
import HTTPCore

private let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
private let maxStreams: UInt32 = 100

/// Answers every request at once, as the relay's health check does.
private final class Answering: HTTP2ServerSessionDelegate {
    var requests: [String] = []
    let maxBody: Int
    let maxHeaderList: Int

    init(maxBody: Int, maxHeaderList: Int) {
        self.maxBody = maxBody
        self.maxHeaderList = maxHeaderList
    }

    func session(_ session: HTTP2ServerSession, didReceiveRequest request: HTTP2Request) {
        require(!request.method.isEmpty, "a request without a method")
        require(request.body.count <= maxBody, "a body of \(request.body.count) bytes over \(maxBody)")
        let listSize = request.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 }
        require(listSize <= maxHeaderList, "a header list of \(listSize) over \(maxHeaderList)")
        let converted = HTTP2Exchange.request(request, clientCertificateSHA256: nil)
        require(converted.method == request.method && converted.target == request.path && converted.body == request.body,
                "the HTTP/1.1 request differs")
        require(converted.clientCertificateSHA256 == nil, "a client certificate out of nowhere")
        if request.header("host") == nil {
            require(converted.headers["host"] == request.authority, "host is not :authority")
        }
        requests.append("\(request.streamID) \(request.method) \(request.path) \(request.authority ?? "-") "
            + "\(request.headers.map { "\($0.name)=\($0.value)" }) \(request.body)")
        let response = HTTP1Response(status: 200, headers: [HTTPField(name: "Connection", value: "close")], body: "ok")
        try? session.submitResponse(streamID: request.streamID, status: response.status,
                                    headers: HTTP2Exchange.responseFields(response), body: response.body)
    }

    func session(_ session: HTTP2ServerSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {}
}

/// Feeds `pieces` of `bytes` to a fresh session; its requests, and whether it survived.
private func run(_ bytes: [UInt8], pieces: [Int], small: Bool) -> (requests: [String], survived: Bool) {
    let maxBody = small ? 64 : 1 << 20
    let maxHeaderList = small ? 256 : 16_384
    let delegate = Answering(maxBody: maxBody, maxHeaderList: maxHeaderList)
    guard let session = try? HTTP2ServerSession(delegate: delegate, maxConcurrentStreams: maxStreams,
                                                maxRequestBodySize: maxBody, maxHeaderListSize: maxHeaderList,
                                                connectionWindowSize: 1 << 20) else {
        require(false, "the session did not start")
        return ([], false)
    }
    var output: [UInt8] = []
    var offset = 0
    var survived = true
    for size in pieces where survived {
        let end = min(bytes.count, offset + size)
        let failed = bytes[offset..<end].withUnsafeBytes { feed(session, $0) }
        offset = end
        output.removeAll(keepingCapacity: true)
        session.takeOutput(into: &output)
        // A session that wants neither to read nor to write is over: the
        // connection closes there (HTTP2ServerConnection) and reads no
        // more. nghttp2 decides that when its output is taken, so a client
        // GOAWAY followed by requests in one piece still delivers them,
        // in two pieces not: only runs that stay open compare.
        if failed || (!session.wantsRead && !session.wantsWrite) { survived = false }
        require(session.activeStreamCount <= Int(maxStreams), "\(session.activeStreamCount) streams held")
        require(session.incompleteRequestCount <= session.activeStreamCount, "more incomplete requests than streams")
    }
    require(session.resetsReceived <= bytes.count / 13, "\(session.resetsReceived) resets from \(bytes.count) bytes")
    return (delegate.requests, survived)
}

/// Not a closure: Swift 6.3.1 crashes compiling a `throws(HTTP2Error)`
/// closure passed to `withUnsafeBytes`.
private func feed(_ session: HTTP2ServerSession, _ bytes: UnsafeRawBufferPointer) -> Bool {
    do {
        try session.receive(bytes)
        return false
    } catch {
        return true
    }
}

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    var seed = UInt32(input.byte()) | 1
    let bytes = (flags & 1 == 1 ? preface : []) + input.rest()
    let small = flags & 2 == 2
    let whole = run(bytes, pieces: [bytes.count], small: small)
    trace("whole: \(whole.requests.count) requests, survived \(whole.survived)")
    guard flags & 4 == 4 else { return 0 }
    var pieces: [Int] = []
    var total = 0
    while total < bytes.count {
        seed = seed &* 1_103_515_245 &+ 12_345
        let piece = 1 + Int(seed >> 16) % 64
        pieces.append(piece)
        total += piece
    }
    let split = run(bytes, pieces: pieces, small: small)
    if whole.survived && split.survived {
        require(whole.requests == split.requests, "in pieces: \(split.requests) instead of \(whole.requests)")
    }
    return 0
}

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Server(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum HTTP2ServerReplay {
    static func main() { replayInputFiles(tool: "http2-server-fuzzer", fuzzOne) }
}
#endif
