/// HTTP/2 error codes carried by RST_STREAM and GOAWAY frames (RFC 9113 §7).
///
/// Codes this enum does not name are kept as `.unknown(code)`: RFC 9113 §7 says
/// an unknown code MUST NOT trigger special behaviour, but it may be logged.
public enum HTTP2ErrorCode: Sendable, Hashable, CustomStringConvertible {
    case noError
    case protocolError
    case internalError
    case flowControlError
    case settingsTimeout
    case streamClosed
    case frameSizeError
    /// The stream was not processed at all (RFC 9113 §8.7): safe to resend.
    case refusedStream
    case cancel
    case compressionError
    case connectError
    case enhanceYourCalm
    case inadequateSecurity
    case http11Required
    case unknown(UInt32)

    public init(rawValue: UInt32) {
        switch rawValue {
        case 0x0: self = .noError
        case 0x1: self = .protocolError
        case 0x2: self = .internalError
        case 0x3: self = .flowControlError
        case 0x4: self = .settingsTimeout
        case 0x5: self = .streamClosed
        case 0x6: self = .frameSizeError
        case 0x7: self = .refusedStream
        case 0x8: self = .cancel
        case 0x9: self = .compressionError
        case 0xa: self = .connectError
        case 0xb: self = .enhanceYourCalm
        case 0xc: self = .inadequateSecurity
        case 0xd: self = .http11Required
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt32 {
        switch self {
        case .noError: 0x0
        case .protocolError: 0x1
        case .internalError: 0x2
        case .flowControlError: 0x3
        case .settingsTimeout: 0x4
        case .streamClosed: 0x5
        case .frameSizeError: 0x6
        case .refusedStream: 0x7
        case .cancel: 0x8
        case .compressionError: 0x9
        case .connectError: 0xa
        case .enhanceYourCalm: 0xb
        case .inadequateSecurity: 0xc
        case .http11Required: 0xd
        case .unknown(let code): code
        }
    }

    /// The RFC 9113 name, e.g. `REFUSED_STREAM`; `0x…` for unknown codes.
    public var description: String {
        switch self {
        case .noError: "NO_ERROR"
        case .protocolError: "PROTOCOL_ERROR"
        case .internalError: "INTERNAL_ERROR"
        case .flowControlError: "FLOW_CONTROL_ERROR"
        case .settingsTimeout: "SETTINGS_TIMEOUT"
        case .streamClosed: "STREAM_CLOSED"
        case .frameSizeError: "FRAME_SIZE_ERROR"
        case .refusedStream: "REFUSED_STREAM"
        case .cancel: "CANCEL"
        case .compressionError: "COMPRESSION_ERROR"
        case .connectError: "CONNECT_ERROR"
        case .enhanceYourCalm: "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: "INADEQUATE_SECURITY"
        case .http11Required: "HTTP_1_1_REQUIRED"
        case .unknown(let code): "0x" + String(code, radix: 16)
        }
    }
}

/// Errors of the HTTP2 layer.
public enum HTTP2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// nghttp2 returned a negative error code; `message` is `nghttp2_strerror(code)`.
    case library(code: Int32, message: String)
    /// The peer broke the protocol; the session queued a GOAWAY with `errorCode`
    /// (still handed out by `takeOutput`) and accepts no more input.
    case connectionError(errorCode: HTTP2ErrorCode, reason: String)
    /// The session already failed; nothing more can be submitted or received.
    case sessionClosed
    /// A new stream cannot be opened: GOAWAY was sent or received, or the
    /// stream identifiers are exhausted (RFC 9113 §5.1.1). Use another connection.
    case newStreamsNotAllowed
    /// The call cannot be honoured as made (invalid header, status out of range,
    /// unknown stream, call from inside a session callback, …).
    case invalidUse(String)

    public var description: String {
        switch self {
        case .library(let code, let message): "nghttp2 error \(code): \(message)"
        case .connectionError(let errorCode, let reason):
            reason.isEmpty ? "HTTP/2 connection error \(errorCode)" : "HTTP/2 connection error \(errorCode): \(reason)"
        case .sessionClosed: "HTTP/2 session is closed"
        case .newStreamsNotAllowed: "HTTP/2 session does not allow new streams"
        case .invalidUse(let reason): "invalid HTTP/2 session use: \(reason)"
        }
    }
}
