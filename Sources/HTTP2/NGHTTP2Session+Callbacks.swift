// nghttp2's callbacks: the C functions nghttp2 calls during `receive` and
// `takeOutput`, which recover their `NGHTTP2Session` from `user_data` with
// `Unmanaged` and translate C frames into the Swift events of
// `NGHTTP2EventHandler`. With NGHTTP2Session.swift, the only files that
// touch nghttp2 pointers.
import CNGHTTP2

// MARK: - Events handed to the client and server sessions

/// A received frame, as far as the sessions above care.
enum ReceivedFrame {
    /// A complete header block (HEADERS + CONTINUATION) for `streamID`.
    case headers(streamID: Int32, endStream: Bool)
    /// A complete DATA frame; its bytes were already handed out as chunks.
    case data(streamID: Int32, endStream: Bool)
    /// A SETTINGS frame (not an ACK), already applied by nghttp2.
    case settings
    /// A WINDOW_UPDATE, already applied by nghttp2 (stream 0: the connection).
    case windowUpdate(streamID: Int32)
    case pingAck(payload: UInt64)
    case goAway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: String)
    /// The peer reset `streamID` (counted against rapid reset, CVE-2023-44487).
    case rstStream(streamID: Int32)
}

/// Receives what nghttp2 reports during `receive` and `takeOutput`.
protocol NGHTTP2EventHandler: AnyObject {
    /// A header block begins; `opensStream` is true for a request that opens a stream (server side).
    func beginHeaders(streamID: Int32, opensStream: Bool)
    /// One field; the bytes are valid only during the call.
    func header(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// Valid only during the call.
    func dataChunk(streamID: Int32, bytes: UnsafeRawBufferPointer)
    func frameReceived(_ frame: ReceivedFrame)
    /// Called by nghttp2 exactly once for every stream it opened.
    func streamClosed(streamID: Int32, errorCode: HTTP2ErrorCode)
}

// MARK: - The callback table

/// Owns an `nghttp2_session_callbacks`; nghttp2 copies it into each session.
final class NGHTTP2Callbacks {
    let pointer: OpaquePointer

    init() throws(HTTP2Error) {
        var created: OpaquePointer?
        let result = nghttp2_session_callbacks_new(&created)
        guard result == 0, let created else { throw .library(result) }
        pointer = created
        nghttp2_session_callbacks_set_on_begin_headers_callback(created, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(created, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(created, onDataChunkRecv)
        nghttp2_session_callbacks_set_on_frame_recv_callback(created, onFrameRecv)
        nghttp2_session_callbacks_set_on_frame_send_callback(created, onFrameSend)
        nghttp2_session_callbacks_set_on_stream_close_callback(created, onStreamClose)
    }

    deinit { nghttp2_session_callbacks_del(pointer) }
}

// MARK: - C trampolines

private func owner(_ userData: UnsafeMutableRawPointer?) -> NGHTTP2Session? {
    guard let userData else { return nil }
    return Unmanaged<NGHTTP2Session>.fromOpaque(userData).takeUnretainedValue()
}

private func text(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> String {
    guard let pointer, count > 0 else { return "" }
    return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
}

private let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
    guard let frame, let session = owner(userData),
          frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    session.handler?.beginHeaders(streamID: frame.pointee.hd.stream_id,
                                  opensStream: frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST)
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let session = owner(userData) else { return 0 }
    session.handler?.header(streamID: frame.pointee.hd.stream_id,
                            name: UnsafeRawBufferPointer(start: name, count: name == nil ? 0 : nameLength),
                            value: UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : valueLength))
    return 0
}

private let onDataChunkRecv: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let session = owner(userData) else { return 0 }
    session.handler?.dataChunk(streamID: streamID, bytes: UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length))
    return 0
}

private let onFrameRecv: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame, let session = owner(userData), let handler = session.handler else { return 0 }
    let header = frame.pointee.hd
    let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    let isAck = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
    switch UInt32(header.type) {
    case NGHTTP2_HEADERS.rawValue:
        handler.frameReceived(.headers(streamID: header.stream_id, endStream: endStream))
    case NGHTTP2_DATA.rawValue:
        handler.frameReceived(.data(streamID: header.stream_id, endStream: endStream))
    case NGHTTP2_SETTINGS.rawValue where !isAck:
        handler.frameReceived(.settings)
    case NGHTTP2_WINDOW_UPDATE.rawValue:
        handler.frameReceived(.windowUpdate(streamID: header.stream_id))
    case NGHTTP2_PING.rawValue where isAck:
        let payload = withUnsafeBytes(of: frame.pointee.ping.opaque_data) { bytes in
            bytes.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        }
        handler.frameReceived(.pingAck(payload: payload))
    case NGHTTP2_RST_STREAM.rawValue:
        handler.frameReceived(.rstStream(streamID: header.stream_id))
    case NGHTTP2_GOAWAY.rawValue:
        let goAway = frame.pointee.goaway
        handler.frameReceived(.goAway(lastStreamID: goAway.last_stream_id,
                                      errorCode: HTTP2ErrorCode(rawValue: goAway.error_code),
                                      debugData: text(goAway.opaque_data, goAway.opaque_data_len)))
    default:
        break
    }
    return 0
}

private let onFrameSend: nghttp2_on_frame_send_callback = { _, frame, userData in
    guard let frame, let session = owner(userData) else { return 0 }
    let isGoAway = frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue)
    session.frameSent(type: frame.pointee.hd.type,
                      errorCode: isGoAway ? frame.pointee.goaway.error_code : 0,
                      debugData: isGoAway ? text(frame.pointee.goaway.opaque_data, frame.pointee.goaway.opaque_data_len) : "")
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    owner(userData)?.streamClosed(streamID: streamID, errorCode: errorCode)
    return 0
}

let onDataSourceRead: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let session = owner(userData) else {
        return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
    }
    return session.readBody(streamID: streamID, into: buffer, capacity: length, flags: flags)
}
