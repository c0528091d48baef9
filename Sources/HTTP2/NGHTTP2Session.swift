// The nghttp2 session's owner: every nghttp2 pointer it holds is freed in
// `deinit`; input and output through nghttp2's memory API, submissions, and
// the state the sessions above read. NGHTTP2Session.swift and
// NGHTTP2Session+Callbacks.swift are the only files that touch nghttp2
// pointers (and `import CNGHTTP2`): the session here, the callbacks there.
//
// nghttp2 1.52 only: `nghttp2_session_mem_recv` / `nghttp2_session_mem_send`
// and the ssize_t callbacks (the `*2` / nghttp2_ssize API is newer).
import CNGHTTP2

/// SETTINGS parameters we send (RFC 9113 §6.5.2).
enum SettingID {
    case enablePush
    case maxConcurrentStreams
    case initialWindowSize
    case maxHeaderListSize

    fileprivate var raw: Int32 {
        switch self {
        case .enablePush: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue)
        case .maxConcurrentStreams: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue)
        case .initialWindowSize: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue)
        case .maxHeaderListSize: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue)
        }
    }
}

extension HTTP2Error {
    /// An nghttp2 library error with its own text (`nghttp2_strerror`).
    static func library(_ code: Int32) -> HTTP2Error {
        .library(code: code, message: String(cString: nghttp2_strerror(code)))
    }
}

/// Version string of the nghttp2 library actually linked.
func linkedNGHTTP2Version() -> String {
    guard let info = nghttp2_version(0) else { return "unknown" }
    return String(cString: info.pointee.version_str)
}

// MARK: - Owners of nghttp2 resources

/// Owns an `nghttp2_option`; nghttp2 copies it into each session.
private final class NGHTTP2Options {
    let pointer: OpaquePointer

    init() throws(HTTP2Error) {
        var created: OpaquePointer?
        let result = nghttp2_option_new(&created)
        guard result == 0, let created else { throw .library(result) }
        pointer = created
    }

    deinit { nghttp2_option_del(pointer) }
}

/// A request or response body that nghttp2 copies into DATA frames on demand.
private struct OutgoingBody {
    let bytes: [UInt8]
    var offset = 0
}

// MARK: - The session

/// One nghttp2 session (client or server) driven purely by memory: bytes in
/// through `receive`, bytes out through `takeOutput`. Not thread-safe: one owner,
/// one thread.
final class NGHTTP2Session {
    enum Role { case client, server }

    weak var handler: (any NGHTTP2EventHandler)?

    private let session: OpaquePointer
    /// Bodies of streams we submitted, keyed by stream id, until their last
    /// byte was copied or the stream closed.
    private var outgoingBodies: [Int32: OutgoingBody] = [:]
    /// Body bytes submitted and not yet copied into DATA frames: what the
    /// bodies waiting inside nghttp2 will take of the peer's window.
    private(set) var unsentBodyBytes = 0
    /// Bytes serialized during `receive` (see there) not yet handed out.
    private var pendingOutput: [UInt8] = []
    /// Guards against `receive`/`takeOutput` being re-entered from a callback,
    /// which nghttp2 does not allow.
    private var insideLibraryCall = false
    /// GOAWAY frames we submitted and nghttp2 has not sent yet; a GOAWAY sent
    /// while this is zero was queued by nghttp2 itself for a connection error.
    private var submittedGoAways = 0
    private var libraryTermination: (errorCode: HTTP2ErrorCode, reason: String)?
    /// Set once the session is unusable; every later call fails with `.sessionClosed`.
    private(set) var failure: HTTP2Error?

    init(role: Role, settings: [(SettingID, UInt32)], keepClosedStreams: Bool = true) throws(HTTP2Error) {
        let callbacks = try NGHTTP2Callbacks()
        let options = try NGHTTP2Options()
        if !keepClosedStreams {
            // Closed streams are only kept for RFC 7540 priorities, which we
            // do not use; dropping them bounds a server's memory.
            nghttp2_option_set_no_closed_streams(options.pointer, 1)
        }
        var created: OpaquePointer?
        let result = switch role {
        case .client: nghttp2_session_client_new2(&created, callbacks.pointer, nil, options.pointer)
        case .server: nghttp2_session_server_new2(&created, callbacks.pointer, nil, options.pointer)
        }
        guard result == 0, let created else { throw .library(result) }
        session = created
        // `self` is complete only now; nghttp2 calls back only from inside
        // mem_recv/mem_send, which run while this object is alive.
        nghttp2_session_set_user_data(created, Unmanaged.passUnretained(self).toOpaque())
        try submitSettings(settings)
    }

    deinit { nghttp2_session_del(session) }

    // MARK: Input and output

    /// Feeds received bytes to nghttp2. Callbacks run synchronously inside.
    ///
    /// Afterwards everything the input provoked is serialized at once (into
    /// `pendingOutput`, handed out by `takeOutput`), because nghttp2 reports most
    /// connection errors only by queueing a GOAWAY: serializing it here lets
    /// this call throw instead of the error surfacing later or never.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        guard !insideLibraryCall else { throw .invalidUse("receive called from inside a session callback") }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        insideLibraryCall = true
        let result = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        insideLibraryCall = false
        if result < 0 {
            let error = HTTP2Error.library(Int32(truncatingIfNeeded: result))
            failure = error
            throw error
        }
        serialize { self.pendingOutput.append(contentsOf: $0) }
        if let failure { throw failure }
    }

    /// Appends every pending output byte to `buffer`. Callbacks (stream
    /// closes) may run inside; they must not touch `buffer`. Does nothing when
    /// called from inside a callback.
    func takeOutput(into buffer: inout [UInt8]) {
        guard !insideLibraryCall else { return }
        if !pendingOutput.isEmpty {
            if buffer.isEmpty {
                swap(&buffer, &pendingOutput)
            } else {
                buffer.append(contentsOf: pendingOutput)
                pendingOutput.removeAll(keepingCapacity: true)
            }
        }
        serialize { buffer.append(contentsOf: $0) }
    }

    /// Runs `nghttp2_session_mem_send` until it has nothing more, handing each
    /// chunk (valid only during the call) to `sink`.
    private func serialize(_ sink: (UnsafeRawBufferPointer) -> Void) {
        guard failure == nil, !insideLibraryCall else { return }
        insideLibraryCall = true
        defer { insideLibraryCall = false }
        while nghttp2_session_want_write(session) != 0 {
            var chunk: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &chunk)
            if count < 0 {
                failure = .library(Int32(truncatingIfNeeded: count))
                return
            }
            guard count > 0, let chunk else { break }
            sink(UnsafeRawBufferPointer(start: chunk, count: count))
        }
        if let termination = libraryTermination, failure == nil {
            failure = .connectionError(errorCode: termination.errorCode, reason: termination.reason)
        }
    }

    var hasPendingOutput: Bool {
        !pendingOutput.isEmpty || (failure == nil && nghttp2_session_want_write(session) != 0)
    }

    var wantsRead: Bool { failure == nil && nghttp2_session_want_read(session) != 0 }

    // MARK: Submissions

    /// Queues a request; returns its stream id.
    func submitRequest(_ headers: HeaderBlock, body: [UInt8]) throws(HTTP2Error) -> Int32 {
        guard failure == nil else { throw .sessionClosed }
        guard nghttp2_session_check_request_allowed(session) != 0 else { throw .newStreamsNotAllowed }
        let result = withNameValues(headers) { fields, count in
            if body.isEmpty {
                return nghttp2_submit_request(session, nil, fields, count, nil, nil)
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: onDataSourceRead)
            return nghttp2_submit_request(session, nil, fields, count, &provider, nil)
        }
        guard result > 0 else { throw .library(result) }
        if !body.isEmpty {
            outgoingBodies[result] = OutgoingBody(bytes: body)
            unsentBodyBytes += body.count
        }
        return result
    }

    /// Queues the response on `streamID`.
    func submitResponse(streamID: Int32, headers: HeaderBlock, body: [UInt8]) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        let result = withNameValues(headers) { fields, count in
            if body.isEmpty {
                return nghttp2_submit_response(session, streamID, fields, count, nil)
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: onDataSourceRead)
            return nghttp2_submit_response(session, streamID, fields, count, &provider)
        }
        guard result == 0 else { throw .library(result) }
        if !body.isEmpty {
            outgoingBodies[streamID] = OutgoingBody(bytes: body)
            unsentBodyBytes += body.count
        }
    }

    func submitRSTStream(streamID: Int32, errorCode: HTTP2ErrorCode) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        let result = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode.rawValue)
        guard result == 0 else { throw .library(result) }
    }

    func submitPing(payload: UInt64) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        let result = withUnsafeBytes(of: payload.bigEndian) { opaque in
            nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue),
                                opaque.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        guard result == 0 else { throw .library(result) }
    }

    func submitGoAway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: String) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        var debug = Array(debugData.utf8)
        let result = debug.withUnsafeMutableBufferPointer { bytes in
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID,
                                  errorCode.rawValue, bytes.baseAddress, bytes.count)
        }
        guard result == 0 else { throw .library(result) }
        submittedGoAways += 1
    }

    /// GOAWAY with last-stream-id 2^31-1 (RFC 9113 §6.8 graceful shutdown);
    /// server only.
    func submitShutdownNotice() throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        let result = nghttp2_submit_shutdown_notice(session)
        guard result == 0 else { throw .library(result) }
        submittedGoAways += 1
    }

    /// GOAWAY with the last processed stream id, then nothing more is sent or read.
    func terminate(errorCode: HTTP2ErrorCode) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        let result = nghttp2_session_terminate_session(session, errorCode.rawValue)
        guard result == 0 else { throw .library(result) }
        submittedGoAways += 1
    }

    func submitSettings(_ settings: [(SettingID, UInt32)]) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        var entries = settings.map { nghttp2_settings_entry(settings_id: $0.0.raw, value: $0.1) }
        let result = entries.withUnsafeMutableBufferPointer { buffer in
            nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), buffer.baseAddress, buffer.count)
        }
        guard result == 0 else { throw .library(result) }
    }

    // MARK: State

    var remoteMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// Largest peer-initiated stream id nghttp2 has processed (0 for a client).
    var lastProcessedStreamID: Int32 { nghttp2_session_get_last_proc_stream_id(session) }

    /// Whether nghttp2 has an open stream object for `streamID` (a client's
    /// request still queued behind the concurrency limit has none yet).
    func streamIsOpen(_ streamID: Int32) -> Bool {
        nghttp2_session_find_stream(session, streamID) != nil
    }

    /// Drops a body nghttp2 will never read (its stream is refused or cancelled).
    func discardBody(streamID: Int32) {
        forgetBody(streamID: streamID)
    }

    private func forgetBody(streamID: Int32) {
        guard let body = outgoingBodies.removeValue(forKey: streamID) else { return }
        unsentBodyBytes -= body.bytes.count - body.offset
    }

    /// The peer's connection-level flow-control window left (RFC 9113 §6.9.1):
    /// DATA bytes we may still send before it sends WINDOW_UPDATE.
    var remoteConnectionWindow: Int {
        failure == nil ? Int(nghttp2_session_get_remote_window_size(session)) : 0
    }

    /// Sets our connection-level receive window (RFC 9113 §6.9: only a
    /// WINDOW_UPDATE on stream 0 changes it; SETTINGS cannot). nghttp2 sends
    /// the WINDOW_UPDATE with the next `takeOutput`.
    func setLocalConnectionWindow(_ size: Int32) throws(HTTP2Error) {
        guard failure == nil else { throw .sessionClosed }
        let result = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, size)
        guard result == 0 else { throw .library(result) }
    }

    // MARK: Callback bodies (called from NGHTTP2Session+Callbacks.swift)

    func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, capacity: Int,
                              flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let index = outgoingBodies.index(forKey: streamID) else {
            // No body for this stream: reset it (INTERNAL_ERROR) rather than
            // sending a truncated message.
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let body = outgoingBodies.values[index]
        let count = min(capacity, body.bytes.count - body.offset)
        body.bytes.withUnsafeBytes { source in
            guard let start = source.baseAddress, count > 0 else { return }
            buffer.update(from: (start + body.offset).assumingMemoryBound(to: UInt8.self), count: count)
        }
        unsentBodyBytes -= count
        if body.offset + count == body.bytes.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            outgoingBodies.remove(at: index)
        } else {
            outgoingBodies.values[index].offset += count
        }
        return count
    }

    func frameSent(type: UInt8, errorCode: UInt32, debugData: String) {
        guard type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return }
        if submittedGoAways > 0 {
            submittedGoAways -= 1
        } else if libraryTermination == nil {
            libraryTermination = (HTTP2ErrorCode(rawValue: errorCode), debugData)
        }
    }

    func streamClosed(streamID: Int32, errorCode: UInt32) {
        forgetBody(streamID: streamID)
        handler?.streamClosed(streamID: streamID, errorCode: HTTP2ErrorCode(rawValue: errorCode))
    }

    /// Builds the `nghttp2_nv` array for `headers` on the stack; nghttp2 copies
    /// names and values during the submit call (no NO_COPY flags: the block's
    /// storage is reused for the next request long before nghttp2 serializes
    /// this one).
    private func withNameValues(_ headers: HeaderBlock,
                                _ body: (UnsafePointer<nghttp2_nv>, Int) -> Int32) -> Int32 {
        let fields = headers.fields
        return headers.bytes.withUnsafeBufferPointer { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return Int32(NGHTTP2_ERR_INVALID_ARGUMENT.rawValue) }
            let mutableBase = UnsafeMutablePointer(mutating: base)
            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: fields.count) { nvs -> Int32 in
                guard let nvBase = nvs.baseAddress else { return Int32(NGHTTP2_ERR_INVALID_ARGUMENT.rawValue) }
                for (index, field) in fields.enumerated() {
                    (nvBase + index).initialize(to: nghttp2_nv(
                        name: mutableBase + field.nameStart, value: mutableBase + field.valueStart,
                        namelen: field.nameCount, valuelen: field.valueCount,
                        flags: UInt8(field.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue
                                                        : NGHTTP2_NV_FLAG_NONE.rawValue)))
                }
                defer { nvBase.deinitialize(count: fields.count) }
                return body(nvBase, fields.count)
            }
        }
    }
}
