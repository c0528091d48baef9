import Glibc
import TestSupport

/// HTTP/2 frames as bytes (RFC 9113 §4.1), written by hand so that tests
/// can send what no well-behaved client library would.
enum Frame {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let data: UInt8 = 0x0, headers: UInt8 = 0x1, rstStream: UInt8 = 0x3, settings: UInt8 = 0x4,
               ping: UInt8 = 0x6, goAway: UInt8 = 0x7, windowUpdate: UInt8 = 0x8, continuation: UInt8 = 0x9
    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4, ack: UInt8 = 0x1

    static func make(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
            + bigEndian(stream & 0x7fff_ffff) + payload
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// A header block of literal fields without indexing (RFC 7541 §6.2.2),
    /// no Huffman coding.
    static func block(_ fields: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            bytes.append(0x00)
            bytes += length(name.utf8.count) + Array(name.utf8)
            bytes += length(value.utf8.count) + Array(value.utf8)
        }
        return bytes
    }

    /// A string length: an integer with a 7-bit prefix (RFC 7541 §5.1).
    private static func length(_ value: Int) -> [UInt8] {
        guard value >= 127 else { return [UInt8(value)] }
        var bytes: [UInt8] = [127]
        var rest = value - 127
        while rest >= 128 {
            bytes.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        bytes.append(UInt8(rest))
        return bytes
    }

    static func request(_ method: String = "GET", _ path: String = "/x", authority: String = "relay.test",
                        extra: [(String, String)] = []) -> [UInt8] {
        block([(":method", method), (":scheme", "http"), (":path", path), (":authority", authority)] + extra)
    }

    /// The preface and an empty SETTINGS: what a client sends first.
    static let opening = preface + make(settings)
}

/// A frame read back.
struct ReceivedFrame {
    var type: UInt8
    var flags: UInt8
    var stream: UInt32
    var payload: [UInt8]

    /// GOAWAY's error code, RST_STREAM's.
    var errorCode: UInt32? {
        switch type {
        case Frame.goAway where payload.count >= 8: UInt32(bytes: payload[4..<8])
        case Frame.rstStream where payload.count >= 4: UInt32(bytes: payload[0..<4])
        default: nil
        }
    }
}

extension UInt32 {
    init(bytes: ArraySlice<UInt8>) {
        self = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// Reads frames from a test client's socket (its receive timeout bounds every wait).
final class FrameReader {
    private let client: TestClient
    private var buffer: [UInt8] = []
    /// The server closed the connection (not the receive timeout).
    private(set) var sawEOF = false

    init(_ client: TestClient) { self.client = client }

    /// The next frame, or nil at EOF (or a reset).
    func next() -> ReceivedFrame? {
        while true {
            if buffer.count >= 9 {
                let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
                if buffer.count >= 9 + length {
                    let frame = ReceivedFrame(type: buffer[3], flags: buffer[4],
                                              stream: UInt32(bytes: buffer[5..<9]) & 0x7fff_ffff,
                                              payload: Array(buffer[9..<(9 + length)]))
                    buffer.removeFirst(9 + length)
                    return frame
                }
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                // 0: EOF; a reset is a close too; EAGAIN is the receive timeout.
                sawEOF = count == 0 || errno == ECONNRESET
                return nil
            }
            buffer += chunk[0..<count]
        }
    }

    /// Frames until one matches (skipping the others), or nil at EOF.
    func first(where matches: (ReceivedFrame) -> Bool) -> ReceivedFrame? {
        while let frame = next() {
            if matches(frame) { return frame }
        }
        return nil
    }

    /// Every frame until EOF.
    func rest() -> [ReceivedFrame] {
        var frames: [ReceivedFrame] = []
        while let frame = next() { frames.append(frame) }
        return frames
    }
}
