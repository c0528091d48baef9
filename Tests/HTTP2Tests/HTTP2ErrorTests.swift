import Testing
@testable import HTTP2

@Suite("HTTP2Error")
struct HTTP2ErrorTests {
    @Test("RFC 9113 §7 codes map to and from their wire values", arguments: [
        (UInt32(0x0), HTTP2ErrorCode.noError, "NO_ERROR"),
        (0x1, .protocolError, "PROTOCOL_ERROR"),
        (0x2, .internalError, "INTERNAL_ERROR"),
        (0x3, .flowControlError, "FLOW_CONTROL_ERROR"),
        (0x4, .settingsTimeout, "SETTINGS_TIMEOUT"),
        (0x5, .streamClosed, "STREAM_CLOSED"),
        (0x6, .frameSizeError, "FRAME_SIZE_ERROR"),
        (0x7, .refusedStream, "REFUSED_STREAM"),
        (0x8, .cancel, "CANCEL"),
        (0x9, .compressionError, "COMPRESSION_ERROR"),
        (0xa, .connectError, "CONNECT_ERROR"),
        (0xb, .enhanceYourCalm, "ENHANCE_YOUR_CALM"),
        (0xc, .inadequateSecurity, "INADEQUATE_SECURITY"),
        (0xd, .http11Required, "HTTP_1_1_REQUIRED"),
        (0xe, .unknown(0xe), "0xe"),
        (0xdead_beef, .unknown(0xdead_beef), "0xdeadbeef"),
    ])
    func errorCodes(raw: UInt32, code: HTTP2ErrorCode, name: String) {
        #expect(HTTP2ErrorCode(rawValue: raw) == code)
        #expect(code.rawValue == raw)
        #expect(code.description == name)
    }

    @Test("library errors carry nghttp2's own text", arguments: [
        (Int32(-505), "Protocol error"),  // NGHTTP2_ERR_PROTO
        (-903, "Received bad client magic byte string"),  // NGHTTP2_ERR_BAD_CLIENT_MAGIC
    ])
    func libraryMessages(code: Int32, message: String) {
        #expect(HTTP2Error.library(code) == .library(code: code, message: message))
        #expect(HTTP2Error.library(code).description == "nghttp2 error \(code): \(message)")
    }

    @Test("descriptions name the reason")
    func descriptions() {
        #expect(HTTP2Error.connectionError(errorCode: .protocolError, reason: "SETTINGS expected").description
            == "HTTP/2 connection error PROTOCOL_ERROR: SETTINGS expected")
        #expect(HTTP2Error.newStreamsNotAllowed.description.contains("new streams"))
        #expect(HTTP2Error.invalidUse("x").description.hasSuffix(": x"))
    }
}
