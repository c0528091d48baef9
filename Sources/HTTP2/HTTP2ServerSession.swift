/// A complete request received by an `HTTP2ServerSession`.
public struct HTTP2Request: Sendable {
    public var streamID: Int32
    public var method: String
    /// `:path`; empty only for CONNECT (RFC 9113 §8.5).
    public var path: String
    /// `:authority`, when the client sent one (RFC 9113 §8.3.1 makes it optional).
    public var authority: String?
    /// `:scheme`; empty only for CONNECT.
    public var scheme: String
    /// Regular header fields in arrival order (names lowercase, no pseudo-headers).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(streamID: Int32, method: String, path: String, authority: String?, scheme: String,
                headers: [(name: String, value: String)], body: [UInt8]) {
        self.streamID = streamID
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
    }

    /// The value of the first field named `name` (lowercase).
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Receives what happens on an `HTTP2ServerSession`.
///
/// Callbacks run synchronously inside `receive(_:)` or `takeOutput(into:)`
/// (a stream closes once its response has been serialized). The delegate may
/// submit responses, resets, SETTINGS or GOAWAY from inside them; it must not
/// call `receive` or `takeOutput`.
public protocol HTTP2ServerSessionDelegate: AnyObject {
    /// A request arrived complete (END_STREAM received); answer it with
    /// `submitResponse`, now or later.
    func session(_ session: HTTP2ServerSession, didReceiveRequest request: HTTP2Request)
    /// `streamID` is finished, exactly once for every stream whose request
    /// headers began to arrive: `.noError` after a complete exchange,
    /// `.refusedStream` for streams above the last-stream-id of a GOAWAY we
    /// sent, `.cancel` when a limit was exceeded, else the RST_STREAM code.
    func session(_ session: HTTP2ServerSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode)
}

/// The server side of one HTTP/2 connection, bytes in and bytes out (used by
/// the APNs emulator). Memory per stream is bounded: a request whose header
/// list or body exceeds the limits is reset with CANCEL and never delivered.
///
/// Not thread-safe: use it from one thread (its event loop).
public final class HTTP2ServerSession: HTTP2Session, NGHTTP2EventHandler {
    public weak var delegate: (any HTTP2ServerSessionDelegate)?

    public let maxRequestBodySize: Int
    public let maxHeaderListSize: Int


    private struct StreamState {
        var method = ""
        var path = ""
        var authority: String?
        var scheme = ""
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
        var headerListSize = 0
        /// Reset for exceeding a limit, or already delivered: ignore further input.
        var finished = false

        init(finished: Bool = false) {
            self.finished = finished
        }
    }

    /// Streams whose request headers began to arrive and that are not yet
    /// reported closed.
    private var streams: [Int32: StreamState] = [:]
    /// The header block being received belongs to trailers, whose fields we drop.
    private var blockIsTrailers = false

    /// Queues the server SETTINGS (SETTINGS_MAX_CONCURRENT_STREAMS when given,
    /// else unlimited; SETTINGS_MAX_HEADER_LIST_SIZE); they go out with the
    /// first `takeOutput`. `connectionWindowSize`, when given, replaces the
    /// connection-level receive window of 65,535 bytes every HTTP/2
    /// connection starts with (RFC 9113 §6.9.2), by a WINDOW_UPDATE after the
    /// SETTINGS.
    public init(delegate: any HTTP2ServerSessionDelegate, maxConcurrentStreams: UInt32? = nil,
                maxRequestBodySize: Int = 65_536, maxHeaderListSize: Int = 16_384,
                connectionWindowSize: Int? = nil) throws(HTTP2Error) {
        guard maxRequestBodySize >= 0, maxHeaderListSize > 0, maxHeaderListSize <= Int(UInt32.max) else {
            throw .invalidUse("limits must be positive")
        }
        if let connectionWindowSize, !(1...Int(Int32.max)).contains(connectionWindowSize) {
            // RFC 9113 §6.9.1: a window may not exceed 2^31-1.
            throw .invalidUse("connection window \(connectionWindowSize) is not within 1...2^31-1")
        }
        self.maxRequestBodySize = maxRequestBodySize
        self.maxHeaderListSize = maxHeaderListSize
        var settings: [(SettingID, UInt32)] = [(.maxHeaderListSize, UInt32(maxHeaderListSize))]
        if let maxConcurrentStreams {
            settings.append((.maxConcurrentStreams, maxConcurrentStreams))
        }
        self.delegate = delegate
        try super.init(core: NGHTTP2Session(role: .server, settings: settings, keepClosedStreams: false))
        core.handler = self
        if let connectionWindowSize { try core.setLocalConnectionWindow(Int32(connectionWindowSize)) }
    }


    /// Streams whose request began and that are not yet closed.
    public var activeStreamCount: Int { streams.count }

    /// Streams whose request began and is not yet complete (neither
    /// delivered nor reset): what a slow client holds open.
    public var incompleteRequestCount: Int { streams.values.reduce(0) { $0 + ($1.finished ? 0 : 1) } }

    /// RST_STREAM frames the peer sent for streams it had opened: a client
    /// that opens and cancels streams in a loop makes the server work for
    /// nothing (rapid reset, CVE-2023-44487); the owner decides how many are too many.
    public private(set) var resetsReceived = 0

    /// Largest client stream id processed so far (what a GOAWAY without an
    /// explicit last-stream-id announces).
    public var lastProcessedStreamID: Int32 { core.lastProcessedStreamID }

    // MARK: Responses and control

    /// Queues the response for `streamID`: HEADERS with `:status`, then the
    /// body in DATA frames, END_STREAM on the last one (or on HEADERS when the
    /// body is empty). `status` must be a final status, 200...599.
    public func submitResponse(streamID: Int32, status: Int, headers: [(name: String, value: String)],
                               body: [UInt8]) throws(HTTP2Error) {
        guard (200...599).contains(status) else { throw .invalidUse("status \(status) is not a final status") }
        guard streams[streamID] != nil, core.streamIsOpen(streamID) else {
            throw .invalidUse("stream \(streamID) is not open")
        }
        var block = HeaderBlock(reservingCapacity: 16 + headers.count * 48)
        try block.appendPseudo(":status", String(status))
        for header in headers {
            try block.appendRegular(name: header.name, value: header.value)
        }
        try core.submitResponse(streamID: streamID, headers: block, body: body)
    }

    public func submitRSTStream(id streamID: Int32, errorCode: HTTP2ErrorCode = .cancel) throws(HTTP2Error) {
        guard streams[streamID] != nil else { throw .invalidUse("stream \(streamID) is not open") }
        streams[streamID] = StreamState(finished: true)
        try core.submitRSTStream(streamID: streamID, errorCode: errorCode)
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS mid-connection (RFC 9113 §6.5.2).
    public func submitSettings(maxConcurrentStreams: UInt32) throws(HTTP2Error) {
        try core.submitSettings([(.maxConcurrentStreams, maxConcurrentStreams)])
    }

    /// GOAWAY (RFC 9113 §6.8). With an explicit `lastStreamID` (0 or a client
    /// stream id, i.e. odd) exactly that id is announced: once the frame is
    /// sent, nghttp2 closes our streams above it with REFUSED_STREAM (reported
    /// through `streamDidClose`) and ignores new ones, and the client sees its
    /// streams above it refused, to resend elsewhere. Streams at or below it
    /// are still answered. Without `lastStreamID`, the last processed stream
    /// id is used. A later GOAWAY can only lower the id (nghttp2 keeps the minimum).
    public func submitGoAway(lastStreamID: Int32? = nil, errorCode: HTTP2ErrorCode = .noError,
                             debugData: String = "") throws(HTTP2Error) {
        let last = lastStreamID ?? core.lastProcessedStreamID
        guard last >= 0, last == 0 || last % 2 == 1 else {
            throw .invalidUse("last stream id \(last) is not a client stream id")
        }
        try core.submitGoAway(lastStreamID: last, errorCode: errorCode, debugData: debugData)
    }

    /// First step of a graceful shutdown (RFC 9113 §6.8): GOAWAY with
    /// last-stream-id 2^31-1, so the client stops opening streams; send the
    /// final `submitGoAway()` at least one round trip later.
    public func submitShutdownNotice() throws(HTTP2Error) {
        try core.submitShutdownNotice()
    }

    /// GOAWAY with `errorCode` and the last processed stream id; nothing more
    /// is sent or read afterwards.
    public func terminate(errorCode: HTTP2ErrorCode = .noError) throws(HTTP2Error) {
        try core.terminate(errorCode: errorCode)
    }

    // MARK: NGHTTP2EventHandler

    func beginHeaders(streamID: Int32, opensStream: Bool) {
        blockIsTrailers = !opensStream
        if opensStream {
            streams[streamID] = StreamState()
        }
    }

    func header(streamID: Int32, name nameBytes: UnsafeRawBufferPointer, value valueBytes: UnsafeRawBufferPointer) {
        // Mutate through the index: binding the state to a local would keep a
        // second reference to its arrays and make every append copy them.
        guard let index = streams.index(forKey: streamID), !streams.values[index].finished else { return }
        let size = streams.values[index].headerListSize + nameBytes.count + valueBytes.count + 32
        guard size <= maxHeaderListSize else {
            rejectOverLimit(streamID)
            return
        }
        streams.values[index].headerListSize = size
        if blockIsTrailers { return }
        let name = String(decoding: nameBytes, as: UTF8.self)
        let value = String(decoding: valueBytes, as: UTF8.self)
        // nghttp2 has validated the pseudo-header fields (RFC 9113 §8.3.1):
        // present, not repeated, and before the regular fields.
        switch name {
        case ":method": streams.values[index].method = value
        case ":path": streams.values[index].path = value
        case ":authority": streams.values[index].authority = value
        case ":scheme": streams.values[index].scheme = value
        default:
            if name.utf8.first != UInt8(ascii: ":") {
                streams.values[index].headers.append((name: name, value: value))
            }
        }
    }

    func dataChunk(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let index = streams.index(forKey: streamID), !streams.values[index].finished else { return }
        guard streams.values[index].body.count + bytes.count <= maxRequestBodySize else {
            rejectOverLimit(streamID)
            return
        }
        streams.values[index].body.append(contentsOf: bytes)
    }

    func frameReceived(_ frame: ReceivedFrame) {
        switch frame {
        case .headers(let streamID, let endStream), .data(let streamID, let endStream):
            guard endStream, let index = streams.index(forKey: streamID),
                  !streams.values[index].finished else { return }
            // Move the request out; the entry stays for the close report.
            let state = streams.values[index]
            streams.values[index] = StreamState(finished: true)
            let request = HTTP2Request(streamID: streamID, method: state.method, path: state.path,
                                       authority: state.authority, scheme: state.scheme,
                                       headers: state.headers, body: state.body)
            delegate?.session(self, didReceiveRequest: request)
        case .rstStream(let streamID):
            // Only a reset of a stream the peer had opened counts (an
            // RST_STREAM for an idle stream is a connection error nghttp2
            // reports itself, RFC 9113 §6.4).
            if streams[streamID] != nil { resetsReceived += 1 }
        case .settings, .windowUpdate, .pingAck, .goAway:
            break
        }
    }

    func streamClosed(streamID: Int32, errorCode: HTTP2ErrorCode) {
        guard streams.removeValue(forKey: streamID) != nil else { return }
        delegate?.session(self, streamDidClose: streamID, errorCode: errorCode)
    }

    /// Bounded memory per stream: drop what we hold and reset with CANCEL
    /// (not REFUSED_STREAM, which would invite the client to resend the same
    /// oversized request, RFC 9113 §8.7).
    private func rejectOverLimit(_ streamID: Int32) {
        streams[streamID] = StreamState(finished: true)
        try? core.submitRSTStream(streamID: streamID, errorCode: .cancel)
    }
}
