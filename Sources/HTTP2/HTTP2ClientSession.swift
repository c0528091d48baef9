import HTTPCore

/// Receives what happens on an `HTTP2ClientSession`.
///
/// Every callback runs synchronously on the caller's thread, inside
/// `receive(_:)` (all kinds), `takeOutput` (a stream whose RST_STREAM we send,
/// or a queued request nghttp2 refuses, closes while output is serialized), or
/// `submitRSTStream` (a request still queued closes at once).
/// From inside a callback the delegate may submit new requests, resets, pings
/// or GOAWAY; it must not call `receive` or `takeOutput` (they refuse), and it
/// must not touch the buffer passed to `takeOutput(into:)`.
public protocol HTTP2ClientSessionDelegate: AnyObject {
    /// The final response header block of `streamID` (1xx interim responses
    /// and trailers are not reported); `fields` excludes pseudo-header fields
    /// and is read in place (no String per field).
    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int,
                 fields: HTTP2HeaderFields, streamID: Int32)
    /// A piece of the response body of `streamID`; `bytes` is valid only during the call.
    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32)
    /// `streamID` is finished: called exactly once for every id returned by
    /// `submitRequest`. `.noError` after a complete response; `.refusedStream`
    /// when the server never processed it (RFC 9113 §8.7, safe to resend);
    /// otherwise the RST_STREAM code received or sent.
    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode)
    /// The server sent SETTINGS (every SETTINGS frame, changed or not, the
    /// first one included); the value is the limit now in force.
    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32)
    /// The server sent GOAWAY (RFC 9113 §6.8). Streams above `lastStreamID`
    /// are reported closed with `.refusedStream` right after this callback.
    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32,
                 errorCode: HTTP2ErrorCode, debugData: String)
    /// The server acknowledged a PING sent with `submitPing(payload:)`.
    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64)
    /// The server's WINDOW_UPDATE on the connection (stream 0) arrived:
    /// `sendableBodyBytes` grew. Optional.
    func sessionConnectionWindowOpened(_ session: HTTP2ClientSession)
}

extension HTTP2ClientSessionDelegate {
    public func sessionConnectionWindowOpened(_ session: HTTP2ClientSession) {}
}

/// The client side of one HTTP/2 connection, bytes in and bytes out: the owner
/// moves bytes between this session and the (TLS) socket, calling
/// `receive(_:)` with what arrived and sending what `takeOutput` hands out.
///
/// The session keeps no per-stream user data: the caller keeps its own map
/// keyed by the stream id `submitRequest` returns (no callback names a stream
/// before that id has been returned).
///
/// Not thread-safe: use it from one thread (its event loop).
public final class HTTP2ClientSession: HTTP2Session, NGHTTP2EventHandler {
    /// Limit on one received header block (RFC 9113 §6.5.2 accounting: name
    /// + value + 32 per field); beyond it the stream is reset with CANCEL.
    public static let maxResponseHeaderListSize = 16_384

    public weak var delegate: (any HTTP2ClientSessionDelegate)?

    /// Streams submitted and not yet reported closed; guarantees the
    /// exactly-once close report even where we report before nghttp2 does.
    private var openStreams: Set<Int32> = []
    private var goAwaySubmitted = false
    public private(set) var lastProcessedStreamID: Int32?

    // The header block being received. HTTP/2 never interleaves header
    // blocks (RFC 9113 §6.10: CONTINUATION must follow at once), so one is enough.
    private var blockStreamID: Int32 = 0
    private var blockStatus: Int?
    private var blockFields = HeaderBlock(reservingCapacity: 512)
    private var blockSize = 0
    private var blockDiscarded = false
    /// The request being submitted: storage reused from one request to the
    /// next (nghttp2 copies the fields during the submit call).
    private var requestBlock = HeaderBlock(reservingCapacity: 512)

    /// Queues the connection preface and SETTINGS (ENABLE_PUSH 0,
    /// MAX_HEADER_LIST_SIZE, and INITIAL_WINDOW_SIZE when given); they go out
    /// with the first `takeOutput`.
    public init(delegate: any HTTP2ClientSessionDelegate, initialWindowSize: UInt32? = nil) throws(HTTP2Error) {
        var settings: [(SettingID, UInt32)] = [
            (.enablePush, 0),
            (.maxHeaderListSize, UInt32(Self.maxResponseHeaderListSize)),
        ]
        if let initialWindowSize {
            // RFC 9113 §6.5.2: above 2^31-1 is a FLOW_CONTROL_ERROR.
            guard initialWindowSize <= UInt32(Int32.max) else {
                throw .invalidUse("initial window size \(initialWindowSize) exceeds 2^31-1")
            }
            settings.append((.initialWindowSize, initialWindowSize))
        }
        self.delegate = delegate
        try super.init(core: NGHTTP2Session(role: .client, settings: settings))
        core.handler = self
    }


    // MARK: Requests

    /// Queues a request and returns its stream id. The body is copied into
    /// DATA frames as flow control allows; the last one carries END_STREAM
    /// (an empty body puts END_STREAM on HEADERS). Requests beyond the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS wait inside nghttp2 until a
    /// stream closes.
    ///
    /// Throws `.newStreamsNotAllowed` after GOAWAY (sent or received), so the
    /// caller can pick another connection, and `.invalidUse` for a header
    /// HTTP/2 forbids (uppercase or invalid name, CR/LF/NUL in a value,
    /// connection-specific fields, RFC 9113 §8.2).
    /// The fields may be marked never-indexed and come from any sequence (a
    /// view of the caller's own storage: no copy).
    public func submitRequest(method: String = "POST", path: String, authority: String, scheme: String = "https",
                              fields: some Sequence<HTTPField>, body: [UInt8]) throws(HTTP2Error) -> Int32 {
        guard core.failure == nil else { throw .sessionClosed }
        guard !isGoingAway else { throw .newStreamsNotAllowed }
        requestBlock.removeAll()
        try requestBlock.appendPseudo(":method", method)
        try requestBlock.appendPseudo(":scheme", scheme)
        try requestBlock.appendPseudo(":authority", authority)
        try requestBlock.appendPseudo(":path", path)
        for field in fields {
            try requestBlock.appendRegular(name: field.name, value: field.value, neverIndexed: field.neverIndexed)
        }
        let streamID = try core.submitRequest(requestBlock, body: body)
        openStreams.insert(streamID)
        return streamID
    }

    /// Resets a stream we opened (default CANCEL). Its close is reported with
    /// `errorCode`: at once when the request was still queued, otherwise when
    /// the RST_STREAM is serialized by `takeOutput`.
    public func submitRSTStream(id streamID: Int32, errorCode: HTTP2ErrorCode = .cancel) throws(HTTP2Error) {
        guard openStreams.contains(streamID) else { throw .invalidUse("stream \(streamID) is not open") }
        let wasQueued = !core.streamIsOpen(streamID)
        try core.submitRSTStream(streamID: streamID, errorCode: errorCode)
        if wasQueued {
            core.discardBody(streamID: streamID)
            reportClosed(streamID, errorCode)
        }
    }

    /// Sends a PING (RFC 9113 §6.7); the ack arrives as `didReceivePingAck` with the same payload.
    public func submitPing(payload: UInt64 = 0) throws(HTTP2Error) {
        try core.submitPing(payload: payload)
    }

    /// Graceful shutdown: sends GOAWAY, lets open streams finish, accepts no
    /// new request. When `wantsRead` and `wantsWrite` are both false, close.
    public func submitGoAway(errorCode: HTTP2ErrorCode = .noError, debugData: String = "") throws(HTTP2Error) {
        try core.submitGoAway(lastStreamID: core.lastProcessedStreamID, errorCode: errorCode, debugData: debugData)
        goAwaySubmitted = true
    }

    /// Immediate shutdown: GOAWAY with `errorCode`, after which nothing more
    /// is sent or read. Streams still open get no close report; the caller
    /// fails them (from its own map of stream ids).
    public func terminate(errorCode: HTTP2ErrorCode = .noError) throws(HTTP2Error) {
        try core.terminate(errorCode: errorCode)
        goAwaySubmitted = true
    }

    // MARK: State

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS. Before its SETTINGS
    /// arrive this is 100: RFC 9113 §6.5.2 starts with no limit, but nghttp2
    /// assumes 100 until told (so a burst sent before the server's SETTINGS
    /// cannot be refused en masse); a server that announces no limit gives
    /// `UInt32.max`. APNs announces a small value first and raises it later,
    /// reported through `didReceiveSettings`.
    public var remoteMaxConcurrentStreams: UInt32 { core.remoteMaxConcurrentStreams }

    /// Body bytes the server's connection flow-control window (RFC 9113
    /// §6.9.1) still admits beyond the bodies already waiting to be sent;
    /// negative when queued bodies exceed it. With hundreds of bodies queued
    /// behind a small window, nghttp2 shares the window among them in small
    /// DATA frames, so every one of them finishes late: a caller that keeps
    /// its requests until this covers them gets them out whole and in order.
    public var sendableBodyBytes: Int { core.remoteConnectionWindow - core.unsentBodyBytes }

    /// Body bytes submitted and not yet sent in DATA frames.
    public var unsentBodyBytes: Int { core.unsentBodyBytes }

    /// Streams submitted and not yet reported closed, including requests
    /// still queued behind the server's concurrency limit.
    public var activeStreamCount: Int { openStreams.count }

    /// True once GOAWAY was received or sent: no new request is accepted.
    /// `lastProcessedStreamID` holds the last-stream-id of the latest GOAWAY received.
    public var isGoingAway: Bool { goAwaySubmitted || lastProcessedStreamID != nil }

    // MARK: NGHTTP2EventHandler

    func beginHeaders(streamID: Int32, opensStream: Bool) {
        blockStreamID = streamID
        blockStatus = nil
        blockFields.removeAll()
        blockSize = 0
        blockDiscarded = false
    }

    func header(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard streamID == blockStreamID, !blockDiscarded else { return }
        blockSize += name.count + value.count + 32
        if blockSize > Self.maxResponseHeaderListSize {
            blockDiscarded = true
            blockFields.removeAll()
            try? core.submitRSTStream(streamID: streamID, errorCode: .cancel)
            return
        }
        if name.first == UInt8(ascii: ":") {
            // nghttp2 already checked the pseudo-header fields (RFC 9113 §8.3.2):
            // a response carries exactly one three-digit :status.
            if name.elementsEqual(":status".utf8) { blockStatus = Self.decimalValue(value) }
        } else {
            blockFields.appendReceived(name: name, value: value)
        }
    }

    /// The value of 1 to 9 ASCII digits, else nil.
    private static func decimalValue(_ digits: UnsafeRawBufferPointer) -> Int? {
        guard (1...9).contains(digits.count) else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    func dataChunk(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard openStreams.contains(streamID) else { return }
        delegate?.session(self, didReceiveData: bytes, streamID: streamID)
    }

    func frameReceived(_ frame: ReceivedFrame) {
        switch frame {
        case .headers(let streamID, _):
            // 1xx is interim (RFC 9110 §15.2); a block without :status is trailers.
            guard streamID == blockStreamID, !blockDiscarded, let status = blockStatus, status >= 200,
                  openStreams.contains(streamID) else { return }
            delegate?.session(self, didReceiveResponse: status, fields: HTTP2HeaderFields(blockFields), streamID: streamID)
        case .data, .rstStream:
            break
        case .windowUpdate(let streamID):
            if streamID == 0 { delegate?.sessionConnectionWindowOpened(self) }
        case .settings:
            delegate?.session(self, didReceiveSettings: core.remoteMaxConcurrentStreams)
        case .pingAck(let payload):
            delegate?.session(self, didReceivePingAck: payload)
        case .goAway(let lastStreamID, let errorCode, let debugData):
            lastProcessedStreamID = lastStreamID
            delegate?.session(self, didReceiveGoAway: lastStreamID, errorCode: errorCode, debugData: debugData)
            // RFC 9113 §6.8: streams above last-stream-id were not processed.
            // nghttp2 closes the opened ones with REFUSED_STREAM right after
            // this callback, but requests still queued behind the concurrency
            // limit only when a slot frees, possibly never; report them all
            // now so the caller can resend at once. nghttp2's own later
            // reports are dropped by `reportClosed`.
            for streamID in openStreams.sorted() where streamID > lastStreamID {
                core.discardBody(streamID: streamID)
                reportClosed(streamID, .refusedStream)
            }
        }
    }

    func streamClosed(streamID: Int32, errorCode: HTTP2ErrorCode) {
        reportClosed(streamID, errorCode)
    }

    private func reportClosed(_ streamID: Int32, _ errorCode: HTTP2ErrorCode) {
        guard openStreams.remove(streamID) != nil else { return }
        delegate?.session(self, streamDidClose: streamID, errorCode: errorCode)
    }
}
