/// A reply from Redis (RESP2, what Redis 7 speaks unless a client says
/// `HELLO 3`), as values: what hiredis' reader parsed, copied out of its
/// `redisReply` tree (`Hiredis.swift`).
///
/// A null bulk string (`$-1`) and a null array (`*-1`) are both `.null`: no
/// command the relay sends tells them apart. A top-level error reply
/// reaches a command's completion as `RedisError.serverError`; `.error`
/// is for errors inside an array (`EXEC`'s answers).
public enum RedisValue: Hashable, Sendable {
    /// A bulk string: bytes, binary-safe.
    case bulkString([UInt8])
    /// A simple string (`+OK`): a status line.
    case status(String)
    case integer(Int64)
    case array([RedisValue])
    case null
    /// An error reply (`-ERR …`), its text as the server wrote it.
    case error(String)

    /// A bulk string from text (tests, expected values).
    public static func bulkString(_ text: String) -> RedisValue { .bulkString(Array(text.utf8)) }

    /// A bulk string's or a status' bytes.
    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let bytes): bytes
        case .status(let text): Array(text.utf8)
        case .integer, .array, .null, .error: nil
        }
    }

    /// A bulk string that is UTF-8, or a status, as text.
    public var string: String? {
        switch self {
        case .bulkString(let bytes): String(validating: bytes, as: UTF8.self)
        case .status(let text): text
        case .integer, .array, .null, .error: nil
        }
    }

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var array: [RedisValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// An error reply's text.
    public var errorText: String? {
        if case .error(let text) = self { return text }
        return nil
    }

    /// Whether this is the status `+OK`.
    public var isOK: Bool { self == .status("OK") }
}

extension RedisValue: CustomStringConvertible {
    /// For tests and debugging, bounded: a bulk string shows its length and
    /// at most 64 bytes, an array at most 16 elements. Values may be
    /// secrets (a provisioned app's private key): never log one.
    public var description: String {
        switch self {
        case .bulkString(let bytes):
            let shown = bytes.prefix(64).map { byte -> String in
                (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: "\"")
                    ? String(UnicodeScalar(byte)) : "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }.joined()
            return "\"\(shown)\"" + (bytes.count > 64 ? "…(\(bytes.count) bytes)" : "")
        case .status(let text): return "+\(text.prefix(64))"
        case .integer(let value): return ":\(value)"
        case .array(let elements):
            let shown = elements.prefix(16).map(\.description).joined(separator: ", ")
            return "[\(shown)" + (elements.count > 16 ? ", …(\(elements.count) elements)]" : "]")
        case .null: return "null"
        case .error(let text): return "-\(text.prefix(64))"
        }
    }
}
